from django.db import migrations, models
from django.db.models import Exists, OuterRef


def complete_finished_open_rounds(apps, schema_editor):
    """Open rounds whose items all have their judgments were left open before rounds could finish:
    they become complete, as the engine now makes them when their last item completes."""
    CollectionRound = apps.get_model("annotation", "CollectionRound")
    WorkItem = apps.get_model("annotation", "WorkItem")
    items = WorkItem.objects.filter(round=OuterRef("pk"))
    (CollectionRound.objects.filter(status="open")
     .filter(Exists(items))
     .exclude(Exists(items.filter(completed_at__isnull=True)))
     .update(status="complete"))


def reopen_complete_rounds(apps, schema_editor):
    apps.get_model("annotation", "CollectionRound").objects.filter(status="complete").update(status="open")


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0014_work_item_open_position_index'),
    ]

    operations = [
        migrations.AlterField(
            model_name='collectionround',
            name='status',
            field=models.CharField(choices=[('draft', 'Draft'), ('open', 'Open'), ('paused', 'Paused'), ('complete', 'Complete'), ('closed', 'Closed'), ('cancelled', 'Cancelled')], db_index=True, default='draft', max_length=20),
        ),
        migrations.RunPython(complete_finished_open_rounds, reopen_complete_rounds),
    ]
