"""The login page's single sign-on button: the provider's name when single sign-on is configured."""

from django import template

from apps.console import sso as sso_config

register = template.Library()


@register.simple_tag
def sso_provider() -> str:
    """The provider's display name, or "" when the console offers no single sign-on."""
    return sso_config.provider_name() if sso_config.enabled() else ""
