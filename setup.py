"""Build hook for the workload's compiled kernels (checksum folds, profile generator, .NET RNG).

``optional=True``: without a compiler the package still installs and runs on the pure
Python fallbacks, only slower, and says so: ``workloads.profile_store.kernels`` (the one
import point) reports ``ACCELERATED = False`` with the reason, and its ``require()`` raises.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "workloads.profile_store._kernels",
            sources=["workloads/profile_store/_kernels.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
