"""Boolean environment variables, read strictly: ``PRIVBENCH_OFFLINE=on`` must not mean
online. Accepted (any case): 1/0, true/false, yes/no, on/off; unset or empty is the
default; anything else is refused naming the variable and the accepted values."""

from __future__ import annotations

import os
from collections.abc import Mapping

from privbench.protocol.errors import ValidationError

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


def env_flag(name: str, default: bool = False, env: Mapping[str, str] | None = None) -> bool:
    """The value of boolean variable ``name``.

    :raises ValidationError: for a value that is neither true nor false.
    """
    raw = (os.environ if env is None else env).get(name)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    shown = raw if len(raw) <= 20 else raw[:17] + "..."
    raise ValidationError(f"environment variable {name}={shown!r} is not a boolean; use one of "
                          f"{'/'.join(TRUE)} (true) or {'/'.join(FALSE)} (false)")
