"""bench/injection-agentdojo's reader of a local AgentDojo checkout (issue 46): the slack suite's
user and injection tasks, as JSON on stdout: each task's prompt (or goal) and its ground-truth calls,
and the suite's environment text and injection vectors. Only the task files and the environment are
read from the checkout; the few names they import from the agentdojo package are stood in for here,
so neither the package's dependencies nor the benchmark's code is needed or copied. Wherever an
injection vector flows into a ground-truth argument it is left as the marker [[vector]], for the
bench to fill in.

    python3 bench/support/agentdojo_slack.py DIR   # DIR holds agentdojo/ (site-packages) or src/agentdojo/
"""

import enum
import importlib.util
import json
import os
import re
import sys
import types
from typing import Any, Generic, TypeVar

import yaml

MARK = "[[{}]]"


def package_root(d: str) -> str:
    for p in (os.path.join(d, "agentdojo"), os.path.join(d, "src", "agentdojo")):
        if os.path.isdir(os.path.join(p, "default_suites", "v1", "slack")):
            return p
    sys.exit(f"no agentdojo/default_suites/v1/slack under {d}")


def module(name: str, **attrs: Any) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__path__ = []  # a package, so submodules can be registered under it
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


T = TypeVar("T")
E = TypeVar("E")


class TaskDifficulty(enum.Enum):
    EASY = 1
    MEDIUM = 2
    HARD = 3


class BaseUserTask(Generic[E]):
    PROMPT = ""


class BaseInjectionTask(Generic[E]):
    GOAL = ""


class FunctionCall:
    def __init__(self, function: str, args: dict, placeholder_args: Any = None, **_: Any) -> None:
        self.function = function
        self.args = args


class TaskSuite(Generic[E]):
    def __init__(self, name: str = "slack", *_: Any) -> None:
        self.name = name
        self.user_tasks: dict[str, Any] = {}
        self.injection_tasks: dict[str, Any] = {}

    @staticmethod
    def _id(cls: type, prefix: str, kind: str) -> str:
        n = re.fullmatch(prefix + r"(\d+)", cls.__name__)
        if not n:
            raise ValueError(f"unexpected task class name {cls.__name__}")
        return f"{kind}_{n.group(1)}"

    def register_user_task(self, cls: type) -> type:
        self.user_tasks[self._id(cls, "UserTask", "user_task")] = cls()
        return cls

    def register_injection_task(self, cls: type) -> type:
        self.injection_tasks[self._id(cls, "InjectionTask", "injection_task")] = cls()
        return cls


class TaskCombinator(Generic[T, E]):
    """Two user tasks as one: the prompts in order (or the given one), the ground truths one after the other."""

    def __init__(self, suite: TaskSuite) -> None:
        self.suite = suite

    def create_combined_task(self, name: str, first: Any, second: Any, prompt: str | None = None) -> None:
        combined = type(name, (type(first),), {})
        combined.PROMPT = prompt or (
            f"Perform the following tasks in the order they are given: 1. {first.PROMPT} 2. {second.PROMPT}"
        )
        combined.ground_truth = lambda self, env: first.ground_truth(env) + second.ground_truth(env)
        self.suite.register_user_task(combined)


suite = TaskSuite("slack")


class SlackEnvironment:
    pass


def load_env(root: str) -> tuple[str, dict[str, str], Any]:
    data = os.path.join(root, "data", "suites", "slack")
    with open(os.path.join(data, "environment.yaml"), encoding="utf-8") as f:
        text = f.read()
    with open(os.path.join(data, "injection_vectors.yaml"), encoding="utf-8") as f:
        vectors = {k: str(v.get("default", "")) for k, v in yaml.safe_load(f).items()}
    marked = text
    for v in vectors:
        marked = marked.replace("{" + v + "}", MARK.format(v))
    raw = yaml.safe_load(marked)
    msg = lambda m: types.SimpleNamespace(**m)  # noqa: E731
    env = SlackEnvironment()
    s = raw["slack"]
    env.slack = types.SimpleNamespace(
        users=list(s["users"]),
        channels=list(s["channels"]),
        user_channels={k: list(v) for k, v in s["user_channels"].items()},
        user_inbox={k: [msg(m) for m in v] for k, v in (s.get("user_inbox") or {}).items()},
        channel_inbox={k: [msg(m) for m in v] for k, v in (s.get("channel_inbox") or {}).items()},
    )
    env.web = types.SimpleNamespace(web_content=dict(raw["web"]["web_content"]), web_requests=list(raw["web"]["web_requests"]))
    return text, vectors, env


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = package_root(sys.argv[1])
    module("agentdojo")
    module("agentdojo.base_tasks", BaseUserTask=BaseUserTask, BaseInjectionTask=BaseInjectionTask, TaskDifficulty=TaskDifficulty)
    module("agentdojo.functions_runtime", FunctionCall=FunctionCall)
    module("agentdojo.task_suite", TaskSuite=TaskSuite)
    module("agentdojo.task_suite.task_combinators", TaskCombinator=TaskCombinator)
    module("agentdojo.default_suites")
    module("agentdojo.default_suites.v1")
    module("agentdojo.default_suites.v1.slack")
    module("agentdojo.default_suites.v1.slack.task_suite", SlackEnvironment=SlackEnvironment, task_suite=suite)
    here = os.path.join(root, "default_suites", "v1", "slack")
    for part in ("user_tasks", "injection_tasks"):
        name = f"agentdojo.default_suites.v1.slack.{part}"
        spec = importlib.util.spec_from_file_location(name, os.path.join(here, f"{part}.py"))
        assert spec and spec.loader
        m = importlib.util.module_from_spec(spec)
        sys.modules[name] = m
        spec.loader.exec_module(m)
    text, vectors, env = load_env(root)
    calls = lambda fs: [{"function": f.function, "args": f.args} for f in fs]  # noqa: E731
    num = lambda k: int(k.rsplit("_", 1)[1])  # noqa: E731
    out = {
        "suite": "slack",
        "environment_yaml": text,
        "vectors": vectors,
        "user_tasks": [
            {"id": k, "prompt": t.PROMPT, "ground_truth": calls(t.ground_truth(env))}
            for k, t in sorted(suite.user_tasks.items(), key=lambda x: num(x[0]))
        ],
        "injection_tasks": [
            {"id": k, "goal": t.GOAL, "ground_truth": calls(t.ground_truth(env))}
            for k, t in sorted(suite.injection_tasks.items(), key=lambda x: num(x[0]))
        ],
    }
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
