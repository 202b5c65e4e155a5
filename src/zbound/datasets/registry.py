"""``load(name)``: every loader of this package by name."""

from __future__ import annotations

from collections.abc import Callable

from . import bundled, highdim, images, sequences, synthetic, uci

# name -> (loader, needs ZBOUND_DATA)
_REGISTRY: dict[str, tuple[Callable, bool]] = {
    "bupa": (uci.load_bupa, True),
    "ionosphere": (uci.load_ionosphere, True),
    "spect": (uci.load_spect, True),
    "hepatitis": (uci.load_hepatitis, True),
    "adult": (uci.load_adult, True),
    "wine": (bundled.load_wine, False),
    "digits": (bundled.load_digits, False),
    "iris": (bundled.load_iris, False),
    "breast_cancer": (bundled.load_breast_cancer, False),
    "multinomial": (synthetic.make_multinomial, False),
    "kmnist": (images.load_kmnist, True),
    "fashion-mnist": (images.load_fashion_mnist, True),  # raises: images unavailable
    "srbct": (highdim.load_srbct, True),
    "ssl-text": (highdim.load_ssl_text, True),
    "conll2000": (sequences.load_conll2000, True),
    "conll2002": (sequences.load_conll2002, True),
    "treebank": (sequences.load_treebank, True),
}

_ALIASES = {
    "liver-disorders": "bupa",
    "liver_disorders": "bupa",
    "ion": "ionosphere",
    "heart": "spect",
    "spect-heart": "spect",
    "breast-cancer": "breast_cancer",
    "fashion_mnist": "fashion-mnist",
    "fashionmnist": "fashion-mnist",
    "ssl_text": "ssl-text",
    "text": "ssl-text",
}

#: The five data sets of Jebara & Choromanska (2012), supplement Table 3, in the table's order.
TABLE3 = ("bupa", "wine", "spect", "ionosphere", "hepatitis")


def available(*, needs_data: bool | None = None) -> list[str]:
    """Registered names, sorted; ``needs_data=False`` lists those that work without ZBOUND_DATA."""
    return sorted(
        n for n, (_, d) in _REGISTRY.items() if needs_data is None or d == needs_data
    )


def load(name: str, **kwargs):
    """Load a data set by name; keyword arguments go to its loader.

    ``load("ionosphere")`` is ``load_ionosphere()``. Names: see :func:`available`; aliases
    ``liver-disorders`` (bupa), ``ion``, ``heart`` (spect), ``breast-cancer``,
    ``fashion_mnist``, ``ssl_text``/``text``. Classification sets return a :class:`Dataset`;
    the sequence corpora (conll2000, conll2002, treebank) return lists of sentences;
    ``fashion-mnist`` raises :class:`DataUnavailableError` (only its labels exist).
    """
    key = _ALIASES.get(name.lower(), name.lower())
    try:
        loader, _ = _REGISTRY[key]
    except KeyError:
        raise ValueError(
            f"unknown data set {name!r}; available: {', '.join(available())}"
        ) from None
    return loader(**kwargs)
