"""The regression corpus: independent reference vectors (:mod:`exact.corpus.generate`), their loader,
the judge, the package's own learners behind the corpus signature, and the pytest plugin that runs any
learner on them in a process of its own (:mod:`exact.corpus.host`, :mod:`exact.corpus.proxy`)."""
