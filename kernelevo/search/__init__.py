"""The search: propose kernels, evaluate them, keep the good and diverse ones, repeat."""
