"""Inputs (strict: unknown members are 422) and documentation shapes of the AI configuration API.

One module per section: `fields` (strict scalars), `settings` (settings and phrases), `assistants`
(assistants and AI operators), `credentials`, `alerts` (alerts and demand signals), `templates` (the
marketplace), `integration` and `translations`. Views import this package, never a module of it."""

from .alerts import AcknowledgedDoc as AcknowledgedDoc
from .alerts import AcknowledgeInput as AcknowledgeInput
from .alerts import AlertDoc as AlertDoc
from .alerts import AlertQuery as AlertQuery
from .alerts import DemandListDoc as DemandListDoc
from .alerts import DemandQuery as DemandQuery
from .alerts import DemandSignalDoc as DemandSignalDoc
from .alerts import alert_payload as alert_payload
from .alerts import demand_payload as demand_payload
from .assistants import AssistantCreatedDoc as AssistantCreatedDoc
from .assistants import AssistantDoc as AssistantDoc
from .assistants import AssistantField as AssistantField
from .assistants import AssistantInput as AssistantInput
from .assistants import OperatorDoc as OperatorDoc
from .assistants import OperatorInput as OperatorInput
from .assistants import OperatorRefDoc as OperatorRefDoc
from .credentials import AiOperatorField as AiOperatorField
from .credentials import BackupField as BackupField
from .credentials import BackupLinkDoc as BackupLinkDoc
from .credentials import CredentialDoc as CredentialDoc
from .credentials import CredentialInput as CredentialInput
from .credentials import CredentialPatchInput as CredentialPatchInput
from .credentials import EmptyQuery as EmptyQuery
from .credentials import ModelDoc as ModelDoc
from .credentials import ModelListDoc as ModelListDoc
from .credentials import SecretField as SecretField
from .fields import DEMAND_CATEGORIES as DEMAND_CATEGORIES
from .fields import LOCALE_CHOICES as LOCALE_CHOICES
from .fields import LocaleMapField as LocaleMapField
from .fields import PhraseListField as PhraseListField
from .fields import TextField as TextField
from .integration import IntegrationCreatedDoc as IntegrationCreatedDoc
from .integration import IntegrationCreatedEnvelope as IntegrationCreatedEnvelope
from .integration import IntegrationDoc as IntegrationDoc
from .integration import IntegrationEnvelope as IntegrationEnvelope
from .integration import IntegrationInput as IntegrationInput
from .settings import EffectiveAssistantDoc as EffectiveAssistantDoc
from .settings import LearningTargetDoc as LearningTargetDoc
from .settings import PhraseDoc as PhraseDoc
from .settings import PhraseLanguagesDoc as PhraseLanguagesDoc
from .settings import PhraseLanguagesInput as PhraseLanguagesInput
from .settings import PhrasesDoc as PhrasesDoc
from .settings import PhrasesInput as PhrasesInput
from .settings import SettingsDoc as SettingsDoc
from .settings import SettingsPatchInput as SettingsPatchInput
from .settings import SettingsQuery as SettingsQuery
from .templates import TemplateDoc as TemplateDoc
from .templates import TemplateListQuery as TemplateListQuery
from .templates import TemplatePageDoc as TemplatePageDoc
from .templates import TemplateQuery as TemplateQuery
from .templates import TemplateSummaryDoc as TemplateSummaryDoc
from .translations import RegenerateDoc as RegenerateDoc
from .translations import RegenerateEnvelope as RegenerateEnvelope
from .translations import RegenerateInput as RegenerateInput
from .translations import RegenerateJobDoc as RegenerateJobDoc
from .translations import TranslationCountsDoc as TranslationCountsDoc
from .translations import TranslationItemDoc as TranslationItemDoc
from .translations import TranslationsDoc as TranslationsDoc
from .translations import TranslationsEnvelope as TranslationsEnvelope
from .translations import TranslationStatusDoc as TranslationStatusDoc
