"""The Django pieces every app shares and that know no app: prepared queries, exact money sums,
typed-text cleaning, the Content-Security-Policy helpers.
"""
