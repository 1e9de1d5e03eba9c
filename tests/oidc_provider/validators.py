"""The test provider's claims: each person's `email` and `email_verified` (or Microsoft Entra ID's
`xms_edov`), released with the scope `email`."""

from django.conf import settings
from oauth2_provider.oauth2_validators import OAuth2Validator


class ClaimsValidator(OAuth2Validator):
    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "xms_edov": "email"}

    def get_additional_claims(self, request):
        person = settings.PEOPLE[request.user.username]
        return {key: value for key, value in person.items() if key != "password"}
