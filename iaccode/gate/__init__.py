"""Gates: every infrastructure CLI a command runs is stopped where it starts.

The agent puts a folder of gates (:mod:`iaccode.gate.folder`), one small program per CLI of
:data:`iaccode.iac.clis.CLIS`, first on the PATH of every command it runs: its own bash and the
editor's terminal. A gate (:mod:`iaccode.gate.shim`) sees the argv the program really gets,
after every expansion, from whatever started it (a script, make, a hook, an interpreter,
``xargs``), and asks the agent over the call's private channel (:mod:`iaccode.gate.channel`)
what to do: a read runs the real program at once; a change goes to its CLI's handler
(:mod:`iaccode.gate.handlers`: by default the permission question, then the real program on
*Allow once*). Without the channel, or with a dead agent or a cancelled call, the gate refuses.
The variables that carry the channel to a command are named in :mod:`iaccode.iac.command_env`,
which keeps the agent's own out of every command's environment.
"""


def gates_first(path: str, folder: str) -> str:
    """The PATH ``path`` with the gates' ``folder`` first (and not again further on)."""
    rest = [part for part in path.split(":") if part and part != folder]
    return ":".join([folder, *rest])
