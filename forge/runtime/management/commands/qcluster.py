"""`manage.py qcluster`: django-q2's command, with Forge's Sentinel (forge.runtime.cluster), so the cluster stops
cleanly however it is signalled. forge.runtime comes before django_q in INSTALLED_APPS for this to replace it."""

from django_q import cluster
from django_q.management.commands import qcluster

from forge.runtime.cluster import Sentinel


class Command(qcluster.Command):
    def handle(self, *args, **options):
        cluster.Sentinel = Sentinel  # the class django-q2's Cluster.start forks, read from its module
        super().handle(*args, **options)
