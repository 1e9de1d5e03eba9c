"""The field framework of widget settings: the field kinds (strict JSON types, constraints, render
defaults for legacy and new widgets, PATCH semantics, nullability, read-only), the validation
context and the sentinels. The fields themselves are declared once in settings_schema.

One module per job: `base` (sentinels, context, the base `Field`), `scalars` (the kinds of one
value) and `structured` (the kinds of nested values). Callers import from this package.
"""

from .base import CLEAR as CLEAR
from .base import INVALID as INVALID
from .base import Context as Context
from .base import Field as Field
from .base import Invalid as Invalid
from .base import pcre as pcre
from .prechat import PrechatField as PrechatField
from .scalars import BooleanField as BooleanField
from .scalars import ChoiceField as ChoiceField
from .scalars import ChoiceListField as ChoiceListField
from .scalars import ColorField as ColorField
from .scalars import IconField as IconField
from .scalars import IntegerChoiceField as IntegerChoiceField
from .scalars import IntegerField as IntegerField
from .scalars import ReadOnlyField as ReadOnlyField
from .scalars import StringField as StringField
from .scalars import TextField as TextField
from .scalars import UrlField as UrlField
from .structured import DeviceProfilesField as DeviceProfilesField
from .structured import LanguageTextsField as LanguageTextsField
from .structured import TranslationsField as TranslationsField
