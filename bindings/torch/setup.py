"""Builds preccl_torch._C with torch.utils.cpp_extension against PReCCL's static library.

CMake runs this (the preccl_torch target) with Debian's /usr/bin/python3:
    python3 setup.py build_ext --build-lib <build>/python --build-temp <build>/torch-obj
with PRECCL_SOURCE_DIR and PRECCL_STATIC_LIB set.
"""
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

src = os.environ["PRECCL_SOURCE_DIR"]
here = os.path.dirname(os.path.abspath(__file__))
libs = os.environ.get("PRECCL_LINK_LIBS", "").split()

setup(
    name="preccl_torch",
    packages=["preccl_torch"],
    package_dir={"preccl_torch": os.path.join(here, "preccl_torch")},
    ext_modules=[
        CppExtension(
            "preccl_torch._C",
            [os.path.join(here, "process_group_preccl.cc"), os.path.join(here, "module.cc")],
            include_dirs=[os.path.join(src, "include")],
            extra_objects=[os.environ["PRECCL_STATIC_LIB"]],
            libraries=libs,
            extra_compile_args=["-O2", "-Wall"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
