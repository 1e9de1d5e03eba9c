"""The test provider's claims: `email` and `email_verified` of each person (scope `email`)."""

from django.conf import settings
from oauth2_provider.oauth2_validators import OAuth2Validator


class ClaimsValidator(OAuth2Validator):
    def get_additional_claims(self, request):
        person = settings.PEOPLE[request.user.username]
        return {"email": person["email"], "email_verified": person["email_verified"]}
