"""Per-agent tokens as the controller checks them (src/controller/auth.hpp, docs/controller.md
"Credentials"): NAME.HEX, HEX = HMAC-SHA256(secret, "weft agent token v1\\n" + NAME). The tests that
model agents give each agent its own, as `weft token agent NAME` would."""
import hashlib
import hmac


def agent_token(secret, name):
    """Agent `name`'s own token under the controller's agent secret `secret`."""
    mac = hmac.new(secret.encode(), b"weft agent token v1\n" + name.encode(), hashlib.sha256)
    return f"{name}.{mac.hexdigest()}"
