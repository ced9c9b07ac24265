from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("axes", "0010_accessattemptexpiration"),
        ("forge_accounts", "0001_groups"),
    ]

    operations = [
        migrations.CreateModel(
            name="LoginFailure",
            fields=[],
            options={"verbose_name": "failed login", "verbose_name_plural": "failed logins", "proxy": True,
                     "indexes": [], "constraints": []},
            bases=("axes.accessattempt",),
        ),
    ]
