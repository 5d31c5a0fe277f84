<#
.SYNOPSIS
  Windows: build the PyInstaller bundle, run its self-test, then the Inno Setup installer
  dist\release\InterviewCopilot-Setup-<version>.exe.

.DESCRIPTION
  pwsh packaging/windows/build_installer.ps1 [-NoLlm] [-SkipTest] [-Python PATH]

  Needs: the venv with the app installed (packaging/install_deps.sh), Inno Setup 6
  (iscc.exe on PATH or in its default folder; `choco install innosetup` on CI).
  Optional code signing: WINDOWS_SIGN_PFX_BASE64 + WINDOWS_SIGN_PASSWORD (signtool from the
  Windows SDK); skipped with a warning when absent.
#>
param(
  [switch]$NoLlm,
  [switch]$SkipTest,
  [string]$Python = ""
)
$ErrorActionPreference = "Stop"
$Root = (Resolve-Path (Join-Path $PSScriptRoot "..\..")).Path
Set-Location $Root

if (-not $Python) { $Python = Join-Path $Root ".venv\Scripts\python.exe" }
if (-not (Test-Path $Python)) { throw "Python not found at $Python (run packaging/install_deps.sh first)" }
$Version = & $Python -c "import re; print(re.search(r'__version__\s*=\s*\x22([^\x22]+)\x22', open('app/__init__.py').read()).group(1))"
if ($LASTEXITCODE -ne 0) { throw "could not read the version" }

& $Python -c "import PyInstaller" 2>$null
if ($LASTEXITCODE -ne 0) { throw "PyInstaller is not installed: run packaging/install_deps.sh (it installs the locked versions)" }
if (-not (Test-Path "assets\icon.ico")) {
  $env:QT_QPA_PLATFORM = "offscreen"
  & $Python packaging\make_icons.py; if ($LASTEXITCODE -ne 0) { throw "make_icons failed" }
}

$env:IC_BUNDLE_LLM = if ($NoLlm) { "0" } else { "1" }
$Dist = Join-Path $Root "dist"
Write-Host "== building interview-copilot $Version (local LLM: $(-not $NoLlm))"
$sw = [Diagnostics.Stopwatch]::StartNew()
& $Python -m PyInstaller --noconfirm --log-level WARN --distpath $Dist --workpath (Join-Path $Root "build\pyinstaller") packaging\interview-copilot.spec
if ($LASTEXITCODE -ne 0) { throw "PyInstaller failed" }
$Bundle = Join-Path $Dist "interview-copilot"
$sizeMb = [math]::Round(((Get-ChildItem $Bundle -Recurse -File | Measure-Object Length -Sum).Sum / 1MB), 0)
Write-Host "== built $Bundle in $([math]::Round($sw.Elapsed.TotalSeconds)) s: $sizeMb MB"

if (-not $SkipTest) {
  # The console twin of the windowed exe, so the report reaches this terminal.  A minimal
  # environment: no Python on PATH, no virtualenv.
  Write-Host "== self-test"
  $psi = New-Object System.Diagnostics.ProcessStartInfo
  $psi.FileName = Join-Path $Bundle "interview-copilot-cli.exe"
  $psi.Arguments = "self-test"
  $psi.UseShellExecute = $false
  $psi.WorkingDirectory = $env:TEMP
  $psi.EnvironmentVariables["PATH"] = "$env:SystemRoot\System32;$env:SystemRoot"
  $psi.EnvironmentVariables.Remove("VIRTUAL_ENV")
  $psi.EnvironmentVariables.Remove("PYTHONPATH")
  $psi.EnvironmentVariables.Remove("PYTHONHOME")
  $psi.EnvironmentVariables["QT_QPA_PLATFORM"] = "offscreen"
  $p = [System.Diagnostics.Process]::Start($psi)
  $p.WaitForExit()
  if ($p.ExitCode -ne 0) { throw "bundle self-test failed (exit $($p.ExitCode))" }
}

function Sign-File([string]$Path) {
  if (-not $env:WINDOWS_SIGN_PFX_BASE64) { return }
  $pfx = Join-Path $env:TEMP "ic-sign.pfx"
  [IO.File]::WriteAllBytes($pfx, [Convert]::FromBase64String($env:WINDOWS_SIGN_PFX_BASE64))
  try {
    $signtool = Get-ChildItem "${env:ProgramFiles(x86)}\Windows Kits\10\bin\*\x64\signtool.exe" | Sort-Object FullName | Select-Object -Last 1
    & $signtool.FullName sign /f $pfx /p $env:WINDOWS_SIGN_PASSWORD /fd SHA256 /tr http://timestamp.digicert.com /td SHA256 $Path
    if ($LASTEXITCODE -ne 0) { throw "signtool failed on $Path" }
  } finally { Remove-Item $pfx -Force }
}
if ($env:WINDOWS_SIGN_PFX_BASE64) {
  Sign-File (Join-Path $Bundle "interview-copilot.exe")
  Sign-File (Join-Path $Bundle "interview-copilot-cli.exe")
} else {
  Write-Warning "WINDOWS_SIGN_PFX_BASE64 not set: executables and installer are unsigned (SmartScreen will warn)."
}

$iscc = (Get-Command iscc.exe -ErrorAction SilentlyContinue).Source
if (-not $iscc) { $iscc = "${env:ProgramFiles(x86)}\Inno Setup 6\ISCC.exe" }
if (-not (Test-Path $iscc)) { throw "Inno Setup 6 not found (choco install innosetup)" }
$Release = Join-Path $Dist "release"
New-Item -ItemType Directory -Force $Release | Out-Null
& $iscc "/DAppVersion=$Version" "/DSourceDir=$Bundle" "/DOutputDir=$Release" packaging\windows\interview-copilot.iss
if ($LASTEXITCODE -ne 0) { throw "iscc failed" }
$Setup = Join-Path $Release "InterviewCopilot-Setup-$Version.exe"
Sign-File $Setup
Write-Host "== done: $Setup ($([math]::Round((Get-Item $Setup).Length / 1MB)) MB)"
