"""The regression corpus: independent reference vectors (:mod:`exact.corpus.generate`), their loader,
the package's own learners behind the corpus signature, and the pytest plugin that runs any learner on them."""
