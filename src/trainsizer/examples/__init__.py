"""Example scenarios shipped with the package (the built-in default of `trainsizer estimate`)."""
