"""THE one definition of widget settings (the field kinds are in settings_fields, the vocabulary of
languages, skins and patterns in settings_vocabulary; both are re-exported here).

Every settings field is declared once below (`FIELDS`), with its JSON type, constraints, defaults
(legacy and new widgets), PATCH semantics, nullability and read-only flag. Everything else is
derived from these declarations and nothing else:

- PATCH validation (`parse_patch`, `merge`, `check_merged`),
- the values `GET /v1/widget/settings` shows (`effective_values`),
- `GET /v1/widget/settings/schema` (`schema_document`),
- the OpenAPI components of the settings bodies (`openapi_object`),
- the public visitor config's settings members (`public_values`).

Conventions every field follows:
- Types are strict: a JSON integer is never accepted as a string or a float, nor a boolean as 0/1.
- A key that is not stored takes its render default (`effective_default`); an explicit null on
  PATCH removes the stored key. The six localization-policy fields refuse null.
- `pattern` is published as PCRE with delimiters (`/\\A(?:...)\\z/u`); the server matches the same
  body with Python's `re.fullmatch`. Bodies use only the syntax both engines share.
- Legacy widgets (created before the cutoff of `apps.widget.services.LEGACY_CUTOFF`) and new widgets
  differ only in the implicit localization defaults the spec names.

Changing a field (adding, removing, or changing a constraint or default) changes
`definition_digest()`; a test pins it, so the change must also bump `SCHEMA_VERSION`.

One module per job: `definition` (the fields) and `operations` (what is derived from them).
Callers import from this package.
"""

from ..settings_fields import CLEAR as CLEAR
from ..settings_fields import INVALID as INVALID
from ..settings_fields import BooleanField as BooleanField
from ..settings_fields import ChoiceField as ChoiceField
from ..settings_fields import ChoiceListField as ChoiceListField
from ..settings_fields import ColorField as ColorField
from ..settings_fields import Context as Context
from ..settings_fields import DeviceProfilesField as DeviceProfilesField
from ..settings_fields import Field as Field
from ..settings_fields import IconField as IconField
from ..settings_fields import IntegerChoiceField as IntegerChoiceField
from ..settings_fields import IntegerField as IntegerField
from ..settings_fields import Invalid as Invalid
from ..settings_fields import LanguageTextsField as LanguageTextsField
from ..settings_fields import ReadOnlyField as ReadOnlyField
from ..settings_fields import StringField as StringField
from ..settings_fields import TextField as TextField
from ..settings_fields import TranslationsField as TranslationsField
from ..settings_fields import UrlField as UrlField
from ..settings_fields import pcre as pcre
from ..settings_vocabulary import COLOR as COLOR
from ..settings_vocabulary import CUSTOM_ICON_BODY as CUSTOM_ICON_BODY
from ..settings_vocabulary import DEFAULT_LANGUAGE_CHOICES as DEFAULT_LANGUAGE_CHOICES
from ..settings_vocabulary import DEVICES as DEVICES
from ..settings_vocabulary import GENERATIONS as GENERATIONS
from ..settings_vocabulary import HTTPS_URL as HTTPS_URL
from ..settings_vocabulary import ICON_PRESET_IDS as ICON_PRESET_IDS
from ..settings_vocabulary import ICON_PRESETS as ICON_PRESETS
from ..settings_vocabulary import ICONS_URL as ICONS_URL
from ..settings_vocabulary import LANGUAGE_URL as LANGUAGE_URL
from ..settings_vocabulary import LANGUAGES as LANGUAGES
from ..settings_vocabulary import MULTI_LINE_TEXT as MULTI_LINE_TEXT
from ..settings_vocabulary import NOT_SETTINGS as NOT_SETTINGS
from ..settings_vocabulary import SCHEMA_VERSION as SCHEMA_VERSION
from ..settings_vocabulary import SINGLE_LINE_TEXT as SINGLE_LINE_TEXT
from ..settings_vocabulary import SKIN_IDS as SKIN_IDS
from ..settings_vocabulary import SKINS as SKINS
from ..settings_vocabulary import SKINS_URL as SKINS_URL
from ..settings_vocabulary import TRANSLATABLE as TRANSLATABLE
from ..settings_vocabulary import Skin as Skin
from .definition import FIELDS as FIELDS
from .definition import POLICY_FIELDS as POLICY_FIELDS
from .definition import PROFILE_FIELDS as PROFILE_FIELDS
from .definition import READ_ONLY as READ_ONLY
from .definition import REVISION_FIELDS as REVISION_FIELDS
from .definition import WRITABLE as WRITABLE
from .operations import active_profiles as active_profiles
from .operations import check_merged as check_merged
from .operations import definition_digest as definition_digest
from .operations import effective_values as effective_values
from .operations import merge as merge
from .operations import openapi_object as openapi_object
from .operations import parse_patch as parse_patch
from .operations import public_values as public_values
from .operations import revision_changed as revision_changed
from .operations import schema_document as schema_document
