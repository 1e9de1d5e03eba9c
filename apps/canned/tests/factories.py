import factory

from apps.canned.models import CannedResponse
from tests.support.factories import WidgetFactory


class CannedResponseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CannedResponse

    widget = factory.SubFactory(WidgetFactory)
    shortcut = factory.Sequence(lambda n: f"reply-{n}")
    title = factory.Sequence(lambda n: f"Reply {n}")
    text = "Hello {{contact.name|there}}!"
    language = None
