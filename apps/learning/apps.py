from django.apps import AppConfig


class LearningConfig(AppConfig):
    name = "apps.learning"
    label = "learning"
    verbose_name = "Self-learning and improvement wishes"
