"""The fitted state of an estimator as plain arrays and numbers, and the estimator rebuilt
from it (for saved model bundles).

``fitted_state()`` returns what ``transform`` and ``predict`` read, as a dict of NumPy arrays,
SciPy sparse matrices, ints, floats and strings (no other Python objects, no None: an
attribute that is None is left out). ``from_fitted_state(params, state)`` builds the estimator
from its parameters (``get_params()``) and that dict; its ``transform`` and ``predict`` give
bit-identical results to the original's. The arrays are passed on as they are, not copied.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self, TypeAlias

import numpy as np
import scipy.sparse as sp

from .._errors import InvalidInputError

StateValue: TypeAlias = "np.ndarray | sp.spmatrix | sp.sparray | int | float | str"
"""A value of a fitted state."""
State: TypeAlias = "dict[str, StateValue]"
"""A fitted state: attribute name → value."""


def state_value(name: str, value: Any) -> StateValue:
    """``value`` as a state value: NumPy scalars become ``int``/``float``."""
    if isinstance(value, np.ndarray) or sp.issparse(value) or isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    raise TypeError(f"fitted attribute {name} is a {type(value).__name__}, not a state value")


class FittedState:
    """``fitted_state`` and ``from_fitted_state`` over the names in ``_state_attributes``."""

    _state_attributes: ClassVar[tuple[str, ...]] = ()
    """The fitted attributes ``transform`` and ``predict`` read."""

    def fitted_state(self) -> State:
        """The fitted attributes ``transform`` and ``predict`` need (see the module
        docstring): the attributes of ``_state_attributes`` that are not None."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        state = {}
        for name in self._state_attributes:
            value = getattr(self, name, None)
            if value is not None:
                state[name] = state_value(name, value)
        return state

    @classmethod
    def from_fitted_state(cls, params: dict[str, Any], state: State) -> Self:
        """The estimator with parameters ``params`` and the fitted ``state`` of
        :meth:`fitted_state` (attributes it leaves out are None)."""
        unknown = sorted(set(state) - set(cls._state_attributes))
        if unknown:
            raise InvalidInputError(
                f"{cls.__name__} has no fitted attribute {unknown[0]!r}; its state holds "
                f"{', '.join(cls._state_attributes)}")
        missing = [name for name in ("n_features_in_", "cluster_centers_") if name not in state]
        if missing:
            raise InvalidInputError(f"the fitted state of {cls.__name__} lacks {missing[0]!r}")
        estimator = cls(**params)
        estimator._validate_params()  # type: ignore[attr-defined]
        for name in cls._state_attributes:
            setattr(estimator, name, state.get(name))
        estimator._restore_state(state)
        return estimator

    def _restore_state(self, state: State) -> None:
        """Rebuild what the state holds in another form (a hook; nothing by default)."""
