"""`shiftbox serve-assessor`: shiftbox served as an A2A assessor ("green") agent that evaluates a participant A2A
agent, in the AgentBeats convention (docs/a2a.md#shiftbox-as-an-assessor).

An assessment request is an A2A message whose text (or data part) is `{"participants": {ROLE: URL},
"config": {...}}`; the assessor runs its task file against the participant (`--agent a2a:URL`, the handover in
the message text) and answers with the run's metrics as an artifact. The a2a-sdk is needed only to serve.
"""

from ._assess import AssessmentResult, AssessorSettings, assess
from ._request import AssessmentConfig, AssessmentRequest, read_request
from ._server import assessor_app, assessor_card, serve_assessor

__all__ = ["AssessmentConfig", "AssessmentRequest", "AssessmentResult", "AssessorSettings", "assess",
           "assessor_app", "assessor_card", "read_request", "serve_assessor"]
