"""A task whose worker is gone (taken, never acknowledged) comes back from the Redis broker soon after
its visibility timeout: each of a worker's periodic looks for such tasks acts, where kombu's default
acts on every tenth look only (100 s apart with its 10 s interval)."""
from __future__ import annotations

import os
import time

import redis
from kombu import Connection, Queue

from tests.settings_env import load_settings

from .test_celery_worker import BROKER_URL

QUEUE = f"crowdbench-restore-test-{os.getpid()}"


def test_the_transport_options_look_every_10_s_or_a_quarter_of_a_shorter_timeout():
    assert load_settings().CELERY_BROKER_TRANSPORT_OPTIONS == {
        "visibility_timeout": 3600, "unacked_restore_interval": 10, "unacked_restore_throttle": 1}
    short = load_settings(CELERY_VISIBILITY_TIMEOUT="8").CELERY_BROKER_TRANSPORT_OPTIONS
    assert short["unacked_restore_interval"] == 2


def test_the_second_look_after_the_timeout_hands_the_dead_workers_task_out_again():
    redis.Redis.from_url(BROKER_URL).ping()  # fails (never skips) when Redis is not running
    options = {**load_settings(CELERY_VISIBILITY_TIMEOUT="1").CELERY_BROKER_TRANSPORT_OPTIONS,
               "unacked_key": f"{QUEUE}.unacked", "unacked_index_key": f"{QUEUE}.unacked_index",
               "unacked_mutex_key": f"{QUEUE}.unacked_mutex"}
    with Connection(BROKER_URL, transport_options=options) as connection:
        queue = Queue(QUEUE, channel=connection.default_channel)
        queue.declare()
        try:
            queue.purge()
            connection.default_channel.basic_publish(
                connection.default_channel.prepare_message("the step run"), exchange="", routing_key=QUEUE)
            taken = queue.get(no_ack=False)  # a worker takes it, and dies before acknowledging it
            assert taken is not None and queue.get() is None
            qos = connection.default_channel.qos
            look = lambda: qos.restore_visible(num=None, interval=connection.default_channel.unacked_restore_throttle)
            look()  # a look before the timeout: nothing is due
            assert queue.get() is None
            time.sleep(1.5)
            look()  # the next look, after the timeout
            again = queue.get(no_ack=True)
            assert again is not None and again.body == taken.body
        finally:
            queue.delete()
            connection.default_channel.client.delete(options["unacked_key"], options["unacked_index_key"])
