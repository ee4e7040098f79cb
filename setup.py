"""Build hook for the optional C accelerator (checksum fold, .NET RNG, profile generator).

``optional=True``: without a compiler the package still installs and runs on the pure
Python fallbacks, only slower.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "asyncbench._speedups",
            sources=["asyncbench/_speedups.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
