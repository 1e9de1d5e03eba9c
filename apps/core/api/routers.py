from rest_framework.routers import SimpleRouter


class ApiRouter(SimpleRouter):
    """Paths exactly as the spec writes them, no trailing slash; a trailing slash is also
    accepted, never redirected (product decision)."""

    def __init__(self):
        super().__init__()
        self.trailing_slash = "/?"
