"""The nightly job: a YAML config, a QA dataset, the pipeline that scores it, artifacts and the regression gate."""
