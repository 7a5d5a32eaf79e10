"""Pure numerical cores of the evaluation app: numpy/scipy/pandas in, numbers out.

Nothing in this package imports Django, so notebooks and benchmarks can use it directly.
"""
