"""Build hook for the optional C accelerator (checksum fold, .NET RNG, profile generator).

``optional=True``: without a compiler the package still installs and runs on the pure
Python fallbacks, only slower.
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
