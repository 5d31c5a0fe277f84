"""The CI and release workflows: parseable, wired as the release process needs, and the tag
check they rely on (packaging/check_tag.py) refuses a tag that is not v{__version__}.

actionlint (when installed) checks expressions and action inputs; these tests check our own
rules, which no linter knows: release publishes once after every CI job, the Windows and
macOS jobs build with the real packaging scripts and replay the demo, actions run on node24.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"

_spec = importlib.util.spec_from_file_location("check_tag", ROOT / "packaging" / "check_tag.py")
assert _spec is not None and _spec.loader is not None
check_tag = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_tag)

PINS = {
    # The commit each action's tag pointed to, read from a mirror of the action's repository
    # (git rev-parse TAG^{commit}): a tag can be moved, a commit cannot.
    "actions/checkout": ("d23441a48e516b6c34aea4fa41551a30e30af803", "v6.1.0"),
    "actions/setup-python": ("ece7cb06caefa5fff74198d8649806c4678c61a1", "v6.3.0"),
    "actions/cache": ("27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5.0.5"),
    "actions/upload-artifact": ("b7c566a772e6b6bfb58ed0dc250532a479d7789f", "v6.0.0"),
    "actions/download-artifact": ("37930b1c2abaa49bbe596cd826c3c89aef350131", "v7.0.0"),
    "softprops/action-gh-release": ("b4309332981a82ec1c5618f44dd2e27cc8bfbfda", "v3.0.0"),
}
NODE24_MAJORS = {
    # The first major of each action whose action.yml says `runs.using: node24`.
    "actions/checkout": 5,
    "actions/setup-python": 6,
    "actions/cache": 5,
    "actions/upload-artifact": 6,
    "actions/download-artifact": 7,
    "softprops/action-gh-release": 3,
}


def load(name: str) -> dict[Any, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True
    assert isinstance(on, dict)
    return on


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job.get("steps", []))


def uses(workflow: dict[Any, Any]) -> list[str]:
    return [s["uses"] for job in workflow["jobs"].values() for s in steps(job) if "uses" in s]


def test_ci_runs_on_every_push_and_pull_request_and_can_be_called() -> None:
    on = triggers(load("ci.yml"))
    assert "pull_request" in on and "push" in on and "workflow_call" in on
    assert "tags" not in (on["push"] or {}), "tags are release.yml's: no second run of the same jobs"


def test_ci_covers_the_three_systems_with_the_real_scripts() -> None:
    jobs = load("ci.yml")["jobs"]
    assert any("bash tests/run.sh" in s.get("run", "") for s in steps(jobs["linux"]))
    matrix = {m["name"]: m for m in jobs["bundle"]["strategy"]["matrix"]["include"]}
    assert matrix["windows"]["os"] == "windows-latest"
    assert matrix["macos"]["os"] == "macos-14"
    builds = " ".join(m["build"] for m in matrix.values())
    for script in ("packaging/windows/build_installer.ps1", "packaging/macos/build_dmg.sh",
                   "packaging/build.sh"):
        assert script in builds
        assert (ROOT / script).is_file()
    runs = " ".join(s.get("run", "") for s in steps(jobs["bundle"]))
    assert "packaging/install_deps.sh" in runs
    assert '-p tests.platform_marks -m "not linux_services"' in runs
    assert "packaging/replay_demo.py" in runs
    assert matrix["windows"]["tests"] and matrix["macos"]["tests"]


def test_the_llama_wheel_is_cached_per_os_on_its_pinned_version() -> None:
    for job in load("ci.yml")["jobs"].values():
        caches = [s for s in steps(job) if s.get("uses", "").startswith("actions/cache@")]
        assert len(caches) == 1
        key = caches[0]["with"]["key"]
        assert "runner.os" in key and "runner.arch" in key
        assert "packaging/llama-cpp-python.txt" in key and "packaging/llama_wheel.sh" in key
    pin = (ROOT / "packaging" / "llama-cpp-python.txt").read_text()
    assert re.search(r"^llama-cpp-python==\d+\.\d+\.\d+$", pin, re.MULTILINE)


def test_signing_secrets_reach_only_a_release_build() -> None:
    bundle = load("ci.yml")["jobs"]["bundle"]
    env = next(s["env"] for s in steps(bundle) if "MACOS_SIGN_IDENTITY" in s.get("env", {}))
    for name, value in env.items():
        if "secrets." in str(value):
            assert str(value).startswith("${{ inputs.release && secrets."), name


def test_release_checks_the_tag_then_reuses_ci_then_publishes_once() -> None:
    release = load("release.yml")
    assert triggers(release)["push"]["tags"] == ["v*"]
    jobs = release["jobs"]
    assert any("packaging/check_tag.py" in s.get("run", "") for s in steps(jobs["version"]))
    assert jobs["ci"]["uses"] == "./.github/workflows/ci.yml"
    assert jobs["ci"]["needs"] == "version"
    assert jobs["ci"]["with"]["release"] is True
    publishers = [name for name, job in jobs.items()
                  if any(s.get("uses", "").startswith("softprops/action-gh-release@") for s in steps(job))]
    assert publishers == ["publish"], "one publishing job"
    assert jobs["publish"]["needs"] == "ci"
    ci_bundle = steps(load("ci.yml")["jobs"]["bundle"])
    assert not any(s.get("uses", "").startswith("softprops/") for s in ci_bundle)
    assert release["permissions"] == {}, "nothing by default: each job asks for its own"
    assert {name: job["permissions"] for name, job in jobs.items()} == {
        "version": {"contents": "read"}, "ci": {"contents": "read"}, "publish": {"contents": "write"}}
    assert load("ci.yml")["permissions"] == {"contents": "read"}
    assert not any("permissions" in job for job in load("ci.yml")["jobs"].values())


def test_release_publishes_the_sha256sums_of_its_installers(tmp_path: Path) -> None:
    """The step runs here on three stand-in installers: SHA256SUMS lists each, checks, and
    is among the files published."""
    publish = steps(load("release.yml")["jobs"]["publish"])
    names = [s.get("name") for s in publish]
    sums = publish[names.index("SHA256SUMS of the installers")]
    assert names.index("SHA256SUMS of the installers") < names.index("Publish the release")
    assert publish[names.index("Publish the release")]["with"]["files"] == "dist/release/*"
    folder = tmp_path / sums["working-directory"]
    folder.mkdir(parents=True)
    installers = ["InterviewCopilot-1.0.0-linux-x86_64.tar.gz", "InterviewCopilot-1.0.0-macos-arm64.dmg",
                  "InterviewCopilot-Setup-1.0.0.exe"]
    for name in installers:
        (folder / name).write_bytes(name.encode())
    run = subprocess.run(["bash", "-e", "-c", sums["run"]], cwd=folder, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    listed = (folder / "SHA256SUMS").read_text().splitlines()
    assert sorted(line.split(maxsplit=1)[1] for line in listed) == sorted(installers)


@pytest.mark.parametrize("name", ["ci.yml", "release.yml"])
def test_every_third_party_action_is_pinned_by_commit(name: str) -> None:
    text = (WORKFLOWS / name).read_text(encoding="utf-8")
    for ref in uses(load(name)):
        if ref.startswith("./"):
            continue
        action, _, commit = ref.partition("@")
        assert action in PINS, f"{ref}: pin it by commit in PINS"
        assert (commit, PINS[action][1]) == PINS[action], f"{ref}: not the pinned commit"
        assert f"{ref}  # {PINS[action][1]}" in text, f"{ref}: say the tag it was read from"


@pytest.mark.parametrize("name", ["ci.yml", "release.yml"])
def test_every_action_runs_on_node24(name: str) -> None:
    used = uses(load(name))
    assert used
    for ref in used:
        if ref.startswith("./"):
            continue
        action, _, _commit = ref.partition("@")
        assert action in NODE24_MAJORS, f"{ref}: which major runs on node24?"
        version = PINS[action][1]  # the tag the commit was read from
        assert int(version.lstrip("v").split(".")[0]) >= NODE24_MAJORS[action], ref


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="actionlint is not installed")
def test_actionlint_finds_nothing() -> None:
    proc = subprocess.run(["actionlint", "-shellcheck=", *sorted(map(str, WORKFLOWS.glob("*.yml")))],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def windows_steps() -> list[dict[str, Any]]:
    return [s for s in steps(load("ci.yml")["jobs"]["bundle"]) if s.get("if") == "matrix.name == 'windows'"]


def test_windows_installs_the_installer_and_runs_the_readmes_commands_from_it() -> None:
    """After the build: a silent install into a folder, the user's PATH checked, the console
    executable's self-test and --list-devices from there, the windowed one's exit codes with
    no console, and a silent uninstall that takes the PATH entry away."""
    bundle = steps(load("ci.yml")["jobs"]["bundle"])
    build = next(i for i, s in enumerate(bundle) if s.get("run") == "${{ matrix.build }}")
    ours = windows_steps()
    assert len(ours) == 4 and all(bundle.index(s) > build for s in ours)
    install, cli, windowed, uninstall = (s["run"] for s in ours)
    assert all(s["shell"] == "pwsh" for s in ours)  # Git Bash would rewrite /VERYSILENT as a path
    assert "InterviewCopilot-Setup-" in install and "/VERYSILENT" in install and "/DIR=" in install
    assert '[Environment]::GetEnvironmentVariable("Path", "User")' in install
    for command in ("interview-copilot-cli self-test", "interview-copilot-cli --list-devices"):
        checked = rf"^{re.escape(command)}\n\s*if \(\$LASTEXITCODE -ne 0\)"  # a failure fails the step
        assert re.search(checked, cli, re.MULTILINE), command
    assert "interview-copilot.exe" in windowed and "UseShellExecute = $true" in windowed
    assert '-ne 2) { throw "windowed listen of a missing file' in windowed
    assert "unins000.exe" in uninstall and "/VERYSILENT" in uninstall
    assert "-contains $env:IC_INSTALLED" in uninstall


def test_one_windows_run_prints_chinese_to_a_file_without_pythonutf8() -> None:
    """The workflow sets PYTHONUTF8=1 for everything, which hid that a redirected stdout on
    Windows is cp1252: the installed CLI transcribes the Chinese clip to a file with UTF-8
    mode off, and the file must be UTF-8 with Chinese in it."""
    assert load("ci.yml")["env"]["PYTHONUTF8"] == "1"
    [step] = [s for s in windows_steps() if "transcribe --language zh" in s["run"]]
    assert step["env"]["PYTHONUTF8"] == "0"
    run = step["run"]
    redirected = r'cmd /c "interview-copilot-cli transcribe --language zh .*zh-question\.wav > \$out"'
    assert re.search(redirected, run)
    assert "[Text.UTF8Encoding]::new($false, $true)" in run  # a byte that is not UTF-8 throws
    assert "IsCJKUnifiedIdeographs" in run
    assert (ROOT / "tests" / "data" / "zh-question.wav").is_file()


# --- the tag check ------------------------------------------------------------------------------


def fake_tree(root: Path, app: str, project: str) -> Path:
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text(f'"""Doc."""\n\n__version__ = "{app}"\n')
    (root / "pyproject.toml").write_text(f'[project]\nname = "x"\nversion = "{project}"\n')
    return root


def test_a_tag_matching_the_version_passes(tmp_path: Path) -> None:
    root = fake_tree(tmp_path, "1.2.3", "1.2.3")
    assert check_tag.problem("v1.2.3", root) is None


@pytest.mark.parametrize("tag", ["1.2.3", "v1.2.4", "v1.2", "v1.2.3-rc1", "release-1.2.3"])
def test_a_tag_that_is_not_v_version_fails(tmp_path: Path, tag: str) -> None:
    why = check_tag.problem(tag, fake_tree(tmp_path, "1.2.3", "1.2.3"))
    assert why is not None and "v1.2.3" in why


def test_pyproject_must_agree_with_the_app(tmp_path: Path) -> None:
    why = check_tag.problem("v1.2.3", fake_tree(tmp_path, "1.2.3", "1.2.0"))
    assert why is not None and "pyproject.toml says 1.2.0" in why


def test_the_script_exits_nonzero_on_a_wrong_tag_and_zero_on_this_repository() -> None:
    script = str(ROOT / "packaging" / "check_tag.py")
    version = check_tag.app_version()
    ok = subprocess.run([sys.executable, script, f"v{version}"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([sys.executable, script, "v999.0.0"], capture_output=True, text=True)
    assert bad.returncode == 1 and f"must be 'v{version}'" in bad.stderr


def test_shell_scripts_keep_lf_on_the_windows_runner() -> None:
    """Git Bash on windows-latest runs packaging/*.sh; a CRLF checkout would break them."""
    attributes = (ROOT / ".gitattributes").read_text(encoding="utf-8").split()
    assert "*.sh" in attributes and "eol=lf" in attributes


# --- the llama-cpp-python wheel CI caches ---------------------------------------------------------


def pinned_llama_version() -> str:
    text = (ROOT / "packaging" / "llama-cpp-python.txt").read_text(encoding="utf-8")
    match = re.search(r"^llama-cpp-python==(\S+)$", text, re.MULTILINE)
    assert match is not None
    return match.group(1)


@pytest.mark.skipif(sys.platform == "win32", reason="bash")
def test_a_cached_wheel_of_the_pinned_version_is_reused_not_compiled(tmp_path: Path) -> None:
    wheel = tmp_path / f"llama_cpp_python-{pinned_llama_version()}-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"cached")
    out = subprocess.run(["bash", str(ROOT / "packaging" / "llama_wheel.sh"), str(tmp_path)],
                         capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "PYTHON": "false"})
    assert out.returncode == 0, out.stderr
    assert f"reusing {wheel}" in out.stdout  # PYTHON=false: any attempt to compile would fail


def test_every_build_compiles_llama_cpp_for_the_same_cpus() -> None:
    """app/platform/bundled.py's CPU check lists what -DGGML_NATIVE=OFF compiles in; the test run and
    the packaged build must both use exactly that flag."""
    wheel_script = (ROOT / "packaging" / "llama_wheel.sh").read_text(encoding="utf-8")
    assert 'CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"' in wheel_script
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF"' in (ROOT / "tests" / "run.sh").read_text(encoding="utf-8")
    assert "llama_wheel.sh" in (ROOT / "packaging" / "install_locked.sh").read_text(encoding="utf-8")


def test_every_install_goes_through_the_lock() -> None:
    """The test run and the installers install with one script, from uv.lock, hash-checked."""
    for script in (ROOT / "tests" / "run.sh", ROOT / "packaging" / "install_deps.sh"):
        text = script.read_text(encoding="utf-8")
        assert "packaging/install_locked.sh" in text, script
        assert "pip install" not in text.replace("pip install --upgrade pip", ""), script
    locked = (ROOT / "packaging" / "install_locked.sh").read_text(encoding="utf-8")
    assert "--frozen" in locked and "--require-hashes" in locked


# --- sizes ----------------------------------------------------------------------------------------


def size_step() -> dict[str, Any]:
    [step] = [s for s in steps(load("ci.yml")["jobs"]["bundle"]) if "GITHUB_STEP_SUMMARY" in s.get("run", "")]
    return step


def test_every_bundle_job_measures_what_it_built() -> None:
    """On the three runners (no `if`, the job's bash), right after the build: the README's
    sizes come from this summary."""
    bundle = steps(load("ci.yml")["jobs"]["bundle"])
    build = next(i for i, s in enumerate(bundle) if s.get("run") == "${{ matrix.build }}")
    step = size_step()
    assert bundle.index(step) == build + 1
    assert "if" not in step and "shell" not in step
    assert load("ci.yml")["jobs"]["bundle"]["defaults"]["run"]["shell"] == "bash"
    assert step["env"]["SYSTEM"] == "${{ matrix.name }}"
    assert "${{" not in step["run"], "the script runs as written in tests/packaging/test_workflows.py"


@pytest.mark.skipif(sys.platform == "win32", reason="bash")
@pytest.mark.parametrize("installed", ["interview-copilot", "Interview Copilot.app"])
def test_the_size_step_prints_each_download_and_the_installed_folder(tmp_path: Path, installed: str) -> None:
    """The step's own script, run on a dist/ of known sizes: one row per file in
    dist/release/ (its bytes) and one for the installed folder (its disk use), in MB."""
    release = tmp_path / "dist" / "release"
    release.mkdir(parents=True)
    (release / "InterviewCopilot-Setup-1.0.0.exe").write_bytes(bytes(3 * 2**20 + 1000))
    folder = tmp_path / "dist" / installed / "_internal"
    folder.mkdir(parents=True)
    for i in range(5):
        (folder / f"part{i}.bin").write_bytes(b"\x01" * 2**20)  # not sparse: du sees 5 MB
    summary = tmp_path / "summary.md"
    env = {"PATH": "/usr/bin:/bin", "SYSTEM": "windows", "GITHUB_STEP_SUMMARY": str(summary)}
    out = subprocess.run(["bash", "-eo", "pipefail", "-c", size_step()["run"]], cwd=tmp_path,
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    text = summary.read_text()
    assert text == out.stdout  # printed to the log too
    assert text.startswith("### windows: sizes\n")
    assert "| download | InterviewCopilot-Setup-1.0.0.exe | 3 |" in text
    assert f"| installed | {installed} | 5 |" in text
