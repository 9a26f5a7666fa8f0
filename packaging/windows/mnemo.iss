; Inno Setup script for Mnemo's Windows installer. Built by packaging/build.py on Windows:
;   iscc /DVersion=0.1.0 /DVariant=cpu /DRoot=C:\path\to\mnemo packaging\windows\mnemo.iss
; It installs the PyInstaller folder dist\mnemo for the current user (no administrator rights),
; with a Start menu entry for the window (Mnemo.exe, no console) and `mnemo` on the user's PATH
; for the command line. The memory lives in %LOCALAPPDATA%\mnemo and is kept on uninstall.

#ifndef Version
  #define Version "0.0.0"
#endif
#ifndef Variant
  #define Variant "cpu"
#endif
#ifndef Root
  #define Root "..\.."
#endif

[Setup]
AppId={{6F0D8B2E-6B3C-4C8A-9E55-4D0C1E7A9B21}
AppName=Mnemo
AppVersion={#Version}
AppPublisher=The Mnemo team
DefaultDirName={localappdata}\Programs\Mnemo
DefaultGroupName=Mnemo
PrivilegesRequired=lowest
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#Root}\dist
OutputBaseFilename=Mnemo-{#Version}-windows-x64-{#Variant}-setup
SetupIconFile={#Root}\resources\icons\mnemo.ico
UninstallDisplayIcon={app}\Mnemo.exe
Compression=lzma2/max
SolidCompression=yes
ChangesEnvironment=yes
WizardStyle=modern
LicenseFile={#Root}\build\notices\THIRD_PARTY_NOTICES.txt

[Files]
Source: "{#Root}\dist\mnemo\*"; DestDir: "{app}"; Flags: recursesubdirs createallsubdirs ignoreversion

[Icons]
Name: "{group}\Mnemo"; Filename: "{app}\Mnemo.exe"
Name: "{userdesktop}\Mnemo"; Filename: "{app}\Mnemo.exe"; Tasks: desktopicon

[Tasks]
Name: "desktopicon"; Description: "Create a desktop shortcut"; Flags: unchecked

[Registry]
; `mnemo` in new terminals: the install folder on the user's PATH, removed again on uninstall.
Root: HKCU; Subkey: "Environment"; ValueType: expandsz; ValueName: "Path"; \
  ValueData: "{olddata};{app}"; Check: NeedsAddPath(ExpandConstant('{app}'))

[Run]
Filename: "{app}\Mnemo.exe"; Description: "Start Mnemo"; Flags: nowait postinstall skipifsilent

[Code]
function NeedsAddPath(Dir: string): Boolean;
var
  Current: string;
begin
  if not RegQueryStringValue(HKCU, 'Environment', 'Path', Current) then
    Result := True
  else
    Result := Pos(';' + Uppercase(Dir) + ';', ';' + Uppercase(Current) + ';') = 0;
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
var
  Current, Dir: string;
  At: Integer;
begin
  if CurUninstallStep <> usPostUninstall then
    exit;
  Dir := ExpandConstant('{app}');
  if RegQueryStringValue(HKCU, 'Environment', 'Path', Current) then
  begin
    At := Pos(';' + Uppercase(Dir), Uppercase(Current));
    if At > 0 then
    begin
      Delete(Current, At, Length(Dir) + 1);
      RegWriteExpandStringValue(HKCU, 'Environment', 'Path', Current);
    end;
  end;
end;
