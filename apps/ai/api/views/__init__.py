"""AI configuration routes: settings, phrases, assistants, AI operators, credentials, alerts,
demand signals, the marketplace and the integration binding. Thin: parse, call one service or
selector, serialize. The detached assistant test lives in `apps.ai.api.detached_views`.

One module per group of routes: `ai_settings` (settings, the legacy migration, phrases),
`assistants`, `operators`, `credentials`, `alerts` (alerts and demand signals), `marketplace`,
`integration` and `translations` (the widget's texts); `schema_notes` holds what their schema texts share.
The URLconf imports the views from this package.
"""

from .ai_settings import AiMessagesView as AiMessagesView
from .ai_settings import AiSettingsMigrateView as AiSettingsMigrateView
from .ai_settings import AiSettingsView as AiSettingsView
from .alerts import AlertViewSet as AlertViewSet
from .alerts import DemandSignalView as DemandSignalView
from .assistants import AssistantViewSet as AssistantViewSet
from .credentials import CredentialViewSet as CredentialViewSet
from .integration import IntegrationView as IntegrationView
from .integration import turn_endpoint as turn_endpoint
from .marketplace import TemplateApplyView as TemplateApplyView
from .marketplace import TemplateDetailView as TemplateDetailView
from .marketplace import TemplateListView as TemplateListView
from .operators import OperatorViewSet as OperatorViewSet
from .schema_notes import MERGE_NOTE as MERGE_NOTE
from .translations import WidgetTranslationsRegenerateView as WidgetTranslationsRegenerateView
from .translations import WidgetTranslationsView as WidgetTranslationsView
