from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        from annotation.judgments import judgments_changed
        from datasets_app.curation import register_use_check

        from .stored_results import READS
        from .stored_results import judgments_changed as record_change
        from .usage import output_compared

        register_use_check(output_compared)

        def on_judgments_changed(sender, *, project_id, yields, **kwargs):
            if yields in READS:
                record_change(project_id=project_id)

        judgments_changed.connect(on_judgments_changed, weak=False, dispatch_uid="evaluation.stored_results")
