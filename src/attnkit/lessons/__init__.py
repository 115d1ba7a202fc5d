"""Small helpers of the learning track (``notebooks/``): what a lesson needs beside the public
API, kept here, tested, instead of copied between notebooks.

* :mod:`attnkit.lessons.mode`: quick mode (``QUICK``, on unless ``QUICK=0``) and budgets;
* :mod:`attnkit.lessons.kernel_regression`: Nadaraya-Watson regression as attention pooling;
* :mod:`attnkit.lessons.sequences`: the bottleneck's data (digit words of growing length) and
  accuracy by source length;
* :mod:`attnkit.lessons.sentiment`: a generated sentiment task in which one word decides (lesson
  9's data).
"""
