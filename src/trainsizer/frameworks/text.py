"""The framework an estimate ran with, in words (the CLI prints these lines under the estimate's tables)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsizer.i18n import tr

if TYPE_CHECKING:
    from trainsizer.frameworks.profiles import FrameworkUse


def framework_lines(info: FrameworkUse | None, lang: str) -> list[str]:
    """One line naming the framework (and whether it was assumed), then one per key its profile set or the
    scenario stated over it."""
    if not info:
        return []
    if info.assumed:
        head = tr("Framework: {framework} (assumed: the scenario names none; give yours with --framework or "
                  "training.framework)", lang, framework=info.framework)
    else:
        head = tr("Framework: {framework} (profile read at {version})", lang, framework=info.framework,
                  version=info.version_read)
    lines = [head]
    for row in info.settings:
        value = str(row.value).lower() if isinstance(row.value, bool) else str(row.value)
        if row.origin == "stated":
            lines.append(tr("  {key} = {value}: stated by the scenario (over the profile)", lang, key=row.key,
                            value=value))
        else:
            lines.append(tr("  {key} = {value}: from the profile ({source})", lang, key=row.key, value=value,
                            source=row.source))
    return lines
