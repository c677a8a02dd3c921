"""ACP conformance: checks any ACP agent command against the protocol, with fake model APIs.

    acp-conformance --agent "CMD ARGS" [options]     # see acp_conformance.cli

Parts a test suite of its own can use too: the fake Messages and Chat Completions APIs
(:mod:`acp_conformance.fakes`) and the model-script builders (:mod:`acp_conformance.script`),
the agent drivers (:mod:`acp_conformance.driver`, trio; :mod:`acp_conformance.line_client`,
synchronous), the schema checker (:mod:`acp_conformance.schema`), remote transports
(:mod:`acp_conformance.remote`) and process checks (:mod:`acp_conformance.processes`).
"""
