"""The periodic work, above the services: what cron and Celery beat run.

``django_paycharge.periodic`` is its public import path; each flow's own tasks
are defined and sent by the flow (``django_paycharge.tasks`` names them all).
"""
