"""The built-in tools, by the name the model calls them."""

from __future__ import annotations

from iaccode.tools.base import Tool


def builtin_tools() -> dict[str, Tool]:
    """A fresh set (tools keep no state between turns, but a turn may bind its own)."""
    from iaccode.tools.bash import Bash
    from iaccode.tools.edit_file import EditFile
    from iaccode.tools.glob import Glob
    from iaccode.tools.grep import Grep
    from iaccode.tools.list_files import ListFiles
    from iaccode.tools.read_file import ReadFile
    from iaccode.tools.todo_write import TodoWrite
    from iaccode.tools.web_fetch import WebFetch
    from iaccode.tools.write_file import WriteFile

    tools: list[Tool] = [
        ReadFile(),
        ListFiles(),
        Glob(),
        Grep(),
        WriteFile(),
        EditFile(),
        Bash(),
        WebFetch(),
        TodoWrite(),
    ]
    return {tool.name: tool for tool in tools}
