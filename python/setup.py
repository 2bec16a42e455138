"""Makes the wheel platform-specific (``py3-none-<platform>``): it carries the built extension, a
shared library for one platform. Everything else is in pyproject.toml."""

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.dist import Distribution


class PlatformWheel(bdist_wheel):
    """Any Python 3, no Python ABI, this platform (the extension is not a Python extension)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


class BinaryDistribution(Distribution):
    """A distribution with a binary part, so the wheel gets a platform tag."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"bdist_wheel": PlatformWheel}, distclass=BinaryDistribution)
