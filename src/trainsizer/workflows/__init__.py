"""One pipeline behind every face: a job becomes a plan, a recommendation, a bill and a report model;
measured cases are validated and calibrated. The CLI, the web planner, the report and the Python API
call these functions and nothing below them, so the same job gives the same answer everywhere."""
