# Copyright 2026 The gesa authors. All rights reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""``ProcessorBase``: what every processor of the package shares, on ``ProcessorMixin``.

- Settings: the constructor's arguments after the tokenizer, kept as attributes of the same name.
  ``save_pretrained`` writes them to ``processor_config.json`` (with the tokenizer and the processor's code),
  ``from_pretrained`` and ``AutoProcessor.from_pretrained(..., trust_remote_code=True)`` read them back, and
  ``from_checkpoint(tokenizer, folder)`` builds a processor on a tokenizer already loaded (what the pipelines do).
  A damaged ``processor_config.json`` (not JSON, not an object, a field the constructor refuses) is one
  ``ValueError`` naming the file and the fix; ``load_processor_settings`` is the one reader of that file.
- ``_tokenizer_backend()``: a private copy of the fast tokenizer's backend, immune to the truncation/padding state that
  tokenizer calls leave behind.
- Pickling (``Dataset.map`` workers, ``datasets`` fingerprints): per-process caches and counters stay out; a copy
  knows it is one, and its log lines say so.
- ``_report``: what an encode call skipped or cut, counted in ``stats`` / ``invalid_examples`` and logged (every cap
  at WARNING, so none is silent, also from worker processes whose counts stay in the worker).

Flat module: copied next to every saved processor; it imports third-party packages and ``loading_gesa`` (the
tokenizer read without remote code).
"""

from __future__ import annotations

import copy
import inspect
import json
import logging as std_logging
import os
from collections import ChainMap, Counter
from collections.abc import Mapping, Sequence
from typing import Any

from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerBase
from transformers.processing_utils import ProcessorMixin
from transformers.utils import cached_file, logging

from .loading_gesa import load_tokenizer

PROCESSOR_CONFIG = "processor_config.json"
HUB_KWARGS = ("cache_dir", "revision", "token", "subfolder", "local_files_only")
_RESAVE = "re-save the processor with processor.save_pretrained(checkpoint_dir)"


def checkpoint_file(name_or_path: str | os.PathLike, filename: str, **hub: Any) -> str | None:
    """The path of ``filename`` in a checkpoint (a folder or a Hub id), ``None`` when it has none."""
    try:
        return cached_file(str(name_or_path), filename, _raise_exceptions_for_missing_entries=False, **hub)
    except OSError:
        return None


def load_processor_settings(name_or_path: str | os.PathLike, **hub: Any) -> tuple[dict[str, Any], str | None]:
    """The settings a checkpoint's ``processor_config.json`` holds and its path; ``({}, None)`` when it has none.

    Raises:
        ValueError: the file is not valid JSON, or not a JSON object (naming the file and the fix).
    """
    path = checkpoint_file(name_or_path, PROCESSOR_CONFIG, **hub)
    if path is None:
        return {}, None
    try:
        with open(path, encoding="utf-8") as handle:
            settings = json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error}); repair the file or {_RESAVE}") from error
    if not isinstance(settings, Mapping):
        raise ValueError(
            f"{path}: must hold a JSON object of processor settings, got {type(settings).__name__}; {_RESAVE}"
        )
    return {key: value for key, value in settings.items() if key not in ("processor_class", "auto_map")}, path


SETTINGS_VERSION = "settings_version"  # processor_config.json's key: the settings' meaning (``upgrade_settings``)


class ProcessorBase(ProcessorMixin):
    """The base of every processor of the package (module docstring): settings, tokenizer backend, pickling, report.

    A subclass takes the tokenizer first and its settings as keyword arguments kept under their own names; it names
    the arguments that are data rather than settings (never written) in ``unsaved_settings``, its caches in
    ``per_process_state``, and the counts its encode calls report in ``cap_warnings`` / ``cap_notes``: ``stats`` key
    -> message template, formatted with the call's counts and the settings (``"{query_truncated} queries cut to
    max_query_length={max_query_length}"``), logged when that count is not 0.
    """

    unsaved_settings: tuple[str, ...] = ()
    per_process_state: tuple[str, ...] = ()
    # the meaning of the saved settings: a subclass that changes what a saved value means raises it and maps the older
    # files' values in ``upgrade_settings`` (a file without the key is version 1), so a checkpoint keeps what it was
    # trained with
    settings_version: int = 1
    cap_warnings: Mapping[str, str] = {}
    cap_notes: Mapping[str, str] = {}

    def __init__(self, tokenizer: PreTrainedTokenizerBase, **kwargs: Any) -> None:
        super().__init__(tokenizer, **kwargs)
        self.stats: Counter[str] = Counter()
        self.invalid_examples: list[Any] = []
        self._backend: Tokenizer | None = None
        self._unpickled_copy = False

    # ------------------------------------------------------------------ settings

    @classmethod
    def setting_names(cls) -> tuple[str, ...]:
        """The constructor's arguments after the tokenizer that ``processor_config.json`` holds."""
        parameters = inspect.signature(cls.__init__).parameters.values()
        variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        return tuple(
            p.name
            for p in parameters
            if p.name not in ("self", "tokenizer", *cls.unsaved_settings) and p.kind not in variadic
        )

    @classmethod
    def check_saved_types(cls, saved: Mapping[str, Any], path: str | None) -> None:
        """A ``ValueError`` naming ``path``, the field and the fix when a saved setting has another JSON type than its
        constructor default (``"max_seq_length": "abc"``, ``"label_names": "O"``): the constructor would compare or
        iterate it into a raw TypeError, or a wrong processor."""
        if path is None:
            return
        parameters = inspect.signature(cls.__init__).parameters
        kinds = ((bool, "true or false"), (int, "an integer"), (float, "a number"), (str, "a string"),
                 ((list, tuple), "a list"), (Mapping, "an object"))  # fmt: skip
        for name, value in saved.items():
            default = parameters[name].default if name in parameters else None
            if default is None or default is inspect.Parameter.empty:
                continue
            if value is None and "None" in str(parameters[name].annotation):  # an optional setting left unset
                continue
            for kind, words in kinds:
                if isinstance(default, kind):
                    fits = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
                    if kind is float:
                        fits = isinstance(value, (int, float)) and not isinstance(value, bool)
                    if not fits:
                        raise ValueError(
                            f"{path}: {name!r} must be {words} (like the default {default!r}), got {value!r}. Fix that "
                            f"field in the file, or {_RESAVE}"
                        )
                    break

    def settings(self) -> dict[str, Any]:
        """This processor's settings, as its constructor takes them back."""
        return {name: getattr(self, name) for name in self.setting_names() if hasattr(self, name)}

    @classmethod
    def upgrade_settings(cls, saved: dict[str, Any], version: int) -> dict[str, Any]:
        """Saved settings of an older ``settings_version`` in this version's terms (none changed meaning here)."""
        return saved

    @classmethod
    def saved_settings(cls, saved: Mapping[str, Any]) -> dict[str, Any]:
        """A ``processor_config.json``'s settings (``load_processor_settings``) in this code's terms: its version key
        dropped, older files upgraded (``upgrade_settings``)."""
        saved = dict(saved)
        version = saved.pop(SETTINGS_VERSION, 1)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            version = 1
        return cls.upgrade_settings(saved, version) if version < cls.settings_version else saved

    def to_dict(self) -> dict[str, Any]:
        """What ``save_pretrained`` writes to ``processor_config.json``: the settings, ``processor_class`` and the
        ``auto_map`` naming this code (no tokenizer, counter, cache or unsaved data)."""
        output = copy.deepcopy(self.settings())
        if getattr(self, "auto_map", None):
            output["auto_map"] = copy.deepcopy(self.auto_map)
        output["processor_class"] = type(self).__name__
        if self.settings_version > 1:
            output[SETTINGS_VERSION] = self.settings_version
        return output

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike, **kwargs: Any) -> ProcessorBase:
        """``ProcessorMixin.from_pretrained`` (the tokenizer and the saved settings; ``kwargs`` override settings); a
        damaged ``processor_config.json`` is one ``ValueError`` naming the file and the fix."""
        hub = {key: kwargs[key] for key in HUB_KWARGS if kwargs.get(key) is not None}
        saved, path = load_processor_settings(pretrained_model_name_or_path, **hub)
        raw, saved = saved, cls.saved_settings(saved)
        cls.check_saved_types({key: value for key, value in saved.items() if key not in kwargs}, path)
        # an upgraded value reaches the constructor as an override of the file's
        kwargs = {**{key: value for key, value in saved.items() if raw.get(key) != value}, **kwargs}
        try:
            return super().from_pretrained(pretrained_model_name_or_path, **kwargs)
        except (TypeError, ValueError) as error:
            raise cls._named(error, path, [name for name in saved if name not in kwargs]) from error

    @classmethod
    def _load_tokenizer_from_pretrained(
        cls,
        sub_processor_type: str,
        pretrained_model_name_or_path: str | os.PathLike,
        subfolder: str = "",
        **kwargs: Any,
    ) -> PreTrainedTokenizerBase:
        """The checkpoint's tokenizer without its remote code (``loading_gesa.load_tokenizer``): ``AutoTokenizer``
        alone would read ``config.json``, whose ``auto_map`` names this package's code, and ask whether to run it."""
        if sub_processor_type != "tokenizer" or subfolder:
            return super()._load_tokenizer_from_pretrained(
                sub_processor_type, pretrained_model_name_or_path, subfolder=subfolder, **kwargs
            )
        return load_tokenizer(pretrained_model_name_or_path, **kwargs)

    @classmethod
    def from_checkpoint(
        cls, tokenizer: PreTrainedTokenizerBase, name_or_path: str | os.PathLike | None, **defaults: Any
    ) -> ProcessorBase:
        """``cls(tokenizer, **settings)`` on a tokenizer already loaded (a pipeline's), with ``defaults`` overridden by
        the settings of this class that the checkpoint's ``processor_config.json`` holds (none without the file or
        ``name_or_path``). A damaged file, a field the constructor refuses, or a checkpoint whose tokenizer cannot be
        rebuilt is one ``ValueError`` naming the file and the fix."""
        saved, path = load_processor_settings(name_or_path) if name_or_path else ({}, None)
        names = set(cls.setting_names())
        own = {key: value for key, value in cls.saved_settings(saved).items() if key in names}
        cls.check_saved_types(own, path)
        try:
            return cls(tokenizer, **{**defaults, **own})
        except (TypeError, ValueError) as error:
            named = cls._named(error, path, list(own))
            if named is error and name_or_path and checkpoint_file(name_or_path, "tokenizer_config.json") is None:
                raise ValueError(
                    f"{name_or_path} has no tokenizer_config.json, so its tokenizer cannot be rebuilt ({error}). Save "
                    "the processor (or its tokenizer) into the checkpoint with save_pretrained(checkpoint_dir)"
                ) from error
            raise named from error

    @staticmethod
    def _named(error: Exception, path: str | None, fields: Sequence[str]) -> Exception:
        """``error`` as a ``ValueError`` naming ``path`` and the fix when it is about one of the file's ``fields``."""
        if path is None or not any(name in str(error) for name in fields):
            return error
        return ValueError(f"{path}: {str(error).rstrip('.')}. Fix that field in the file, or {_RESAVE}")

    # ------------------------------------------------------------------ tokenizer backend and pickling

    def _tokenizer_backend(self) -> Tokenizer:
        """A private copy of the fast backend: immune to truncation/padding state left by tokenizer calls (rebuilt when
        tokens were added to the tokenizer)."""
        source = getattr(self.tokenizer, "backend_tokenizer", None)
        if not isinstance(source, Tokenizer):
            raise TypeError(
                f"{type(self).__name__} needs a fast tokenizer with a `tokenizers` backend (offsets, batching); got "
                f"{type(self.tokenizer).__name__}"
            )
        if self._backend is None or self._backend.get_vocab_size(with_added_tokens=True) != len(self.tokenizer):
            backend = Tokenizer.from_str(source.to_str())
            backend.no_truncation()
            backend.no_padding()
            self._backend = backend
        return self._backend

    def __getstate__(self) -> dict[str, Any]:
        # Per-process caches and counters stay out of pickles (Dataset.map workers, fingerprints): the same state (and
        # datasets fingerprint) for an original and a copy.
        state = self.__dict__.copy()
        state.update({name: None for name in ("_backend", *self.per_process_state)})
        state.update(stats=Counter(), invalid_examples=[], _unpickled_copy=False)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        # A copy (e.g. in a ``Dataset.map(num_proc>1)`` worker) counts into its own ``stats``, which never reach the
        # original processor: its log lines say so, and carry the process id.
        self._unpickled_copy = True

    # ------------------------------------------------------------------ report

    def _report(self, stats: Mapping[str, int], invalid: Sequence[Any] = (), counted: bool = False) -> None:
        """Accumulate one encode call's counts (``counted``: already in ``self.stats``) and skipped examples (items
        with ``example_id`` and ``reason``), and log each: skipped examples and ``cap_warnings`` at WARNING (they show
        at the default verbosity), ``cap_notes`` at INFO."""
        stats = Counter(stats)
        if not counted:
            self.stats.update(stats)
        self.invalid_examples.extend(invalid)
        logger = logging.get_logger(type(self).__module__)
        source = type(self).__name__
        if self._unpickled_copy:
            source += f" (copy in process {os.getpid()}, e.g. a Dataset.map worker; counted there only)"
        for item in invalid:
            logger.warning(f"{source}: skipped invalid example {item.example_id!r}: {item.reason}")
        values = ChainMap(self.settings(), stats)  # the settings first: a Counter answers 0 for any name
        for level, messages in ((std_logging.WARNING, self.cap_warnings), (std_logging.INFO, self.cap_notes)):
            for key, template in messages.items():
                if stats[key]:
                    logger.log(level, f"{source}: {template.format_map(values)}")


__all__ = ["PROCESSOR_CONFIG", "ProcessorBase", "checkpoint_file", "load_processor_settings"]
