"""Leased delivery processing, and deliveries deduplicated per account.

Existing rows keep working: a row left ``processing`` by a process that died
before this migration has no lease, and counts as stuck (taken over by the
next worker or command run). The old one-column unique index is dropped
only after the (account, dedupe_key) constraint exists, so deliveries are
never without a uniqueness guarantee.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('django_paycharge', '0003_charge_request_outcomes'),
    ]

    operations = [
        migrations.AddField(
            model_name='webhookdelivery',
            name='claimed_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='last claimed at'),
        ),
        migrations.AddField(
            model_name='webhookdelivery',
            name='claimed_by',
            field=models.CharField(blank=True, max_length=200, verbose_name='claimed by'),
        ),
        migrations.AddField(
            model_name='webhookdelivery',
            name='lease_until',
            field=models.DateTimeField(blank=True, null=True, verbose_name='lease until'),
        ),
        migrations.AddConstraint(
            model_name='webhookdelivery',
            constraint=models.UniqueConstraint(fields=('account', 'dedupe_key'), name='paycharge_delivery_once'),
        ),
        migrations.AlterField(
            model_name='webhookdelivery',
            name='dedupe_key',
            field=models.CharField(max_length=80),
        ),
    ]
