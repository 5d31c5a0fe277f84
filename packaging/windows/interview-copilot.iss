; Inno Setup 6 script: InterviewCopilot-Setup-<version>.exe from the PyInstaller onedir bundle.
; Per-user install, no administrator rights.  Built by packaging/windows/build_installer.ps1:
;   iscc /DAppVersion=0.1.0 /DSourceDir=..\..\dist\interview-copilot /DOutputDir=..\..\dist\release interview-copilot.iss

#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif
#ifndef SourceDir
  #define SourceDir "..\..\dist\interview-copilot"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\dist\release"
#endif
#define AppName "Interview Copilot"
#define AppExeName "interview-copilot.exe"
#define AppPublisher "Interview Copilot"

[Setup]
; AppId identifies the app for upgrades and the uninstaller: never change it.
AppId={{6F0C2B0E-8D1B-4C55-9B64-2E4D6C3A9F17}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher={#AppPublisher}
VersionInfoVersion={#AppVersion}
VersionInfoProductName={#AppName}
VersionInfoDescription={#AppName} installer
; Per user, no UAC prompt: installs to %LOCALAPPDATA%\Programs\Interview Copilot
PrivilegesRequired=lowest
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
UsePreviousAppDir=yes
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
MinVersion=10.0
OutputDir={#OutputDir}
OutputBaseFilename=InterviewCopilot-Setup-{#AppVersion}
SetupIconFile=..\..\assets\icon.ico
UninstallDisplayIcon={app}\{#AppExeName}
UninstallDisplayName={#AppName} {#AppVersion}
Compression=lzma2/max
SolidCompression=yes
LZMANumBlockThreads=4
WizardStyle=modern
CloseApplications=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[InstallDelete]
; An upgrade replaces the bundle completely: stale DLLs from an older version must not linger.
Type: filesandordirs; Name: "{app}\_internal"

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExeName}"; WorkingDir: "{app}"
Name: "{autoprograms}\{#AppName} licences"; Filename: "{app}\_internal\licenses"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExeName}"; WorkingDir: "{app}"; Tasks: desktopicon

[Run]
Filename: "{app}\{#AppExeName}"; Description: "{cm:LaunchProgram,{#StringChange(AppName, '&', '&&')}}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; Only the program folder; settings and sessions in %APPDATA% / %LOCALAPPDATA% are kept.
Type: filesandordirs; Name: "{app}\_internal"
