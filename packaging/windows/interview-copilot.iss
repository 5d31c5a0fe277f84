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
; The "addtopath" task changes the user's PATH: tell Explorer, so new terminals see it.
ChangesEnvironment=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked
; The install folder holds only the two executables and the uninstaller (the DLLs are in
; _internal\), so putting it on PATH shadows no other program's libraries.
Name: "addtopath"; Description: "Add interview-copilot-cli (the command line) to my PATH"; GroupDescription: "Command line:"

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

[Code]
{ The user's PATH (HKCU\Environment, no administrator rights) gets the install folder when
  the "addtopath" task is chosen, and loses it on uninstall, whatever else is there. }

function IsOurEntry(Entry, Dir: String): Boolean;
begin
  Result := CompareText(RemoveBackslashUnlessRoot(Trim(Entry)), RemoveBackslashUnlessRoot(Dir)) = 0;
end;

function UserPathEntries(var Entries: TArrayOfString): Boolean;
var
  Paths: String;
begin
  Result := RegQueryStringValue(HKEY_CURRENT_USER, 'Environment', 'Path', Paths);
  if Result then
    Entries := StringSplit(Paths, [';'], stExcludeEmpty)
  else
    SetArrayLength(Entries, 0);
end;

procedure AddToUserPath(Dir: String);
var
  Entries: TArrayOfString;
  Paths: String;
  I: Integer;
begin
  if not UserPathEntries(Entries) then
    Log('the user has no PATH yet');
  Paths := '';
  for I := 0 to GetArrayLength(Entries) - 1 do
  begin
    if IsOurEntry(Entries[I], Dir) then
      exit;  { already there (an upgrade) }
    Paths := Paths + Entries[I] + ';';
  end;
  if not RegWriteExpandStringValue(HKEY_CURRENT_USER, 'Environment', 'Path', Paths + Dir) then
    Log('could not add ' + Dir + ' to the user PATH');
end;

procedure RemoveFromUserPath(Dir: String);
var
  Entries: TArrayOfString;
  Paths: String;
  I: Integer;
  Found: Boolean;
begin
  if not UserPathEntries(Entries) then
    exit;
  Paths := '';
  Found := False;
  for I := 0 to GetArrayLength(Entries) - 1 do
  begin
    if IsOurEntry(Entries[I], Dir) then
      Found := True
    else if Paths = '' then
      Paths := Entries[I]
    else
      Paths := Paths + ';' + Entries[I];
  end;
  if not Found then
    exit;
  if not RegWriteExpandStringValue(HKEY_CURRENT_USER, 'Environment', 'Path', Paths) then
    Log('could not remove ' + Dir + ' from the user PATH');
end;

procedure CurStepChanged(CurStep: TSetupStep);
begin
  if (CurStep = ssPostInstall) and WizardIsTaskSelected('addtopath') then
    AddToUserPath(ExpandConstant('{app}'));
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
begin
  if CurUninstallStep = usPostUninstall then
    RemoveFromUserPath(ExpandConstant('{app}'));
end;
