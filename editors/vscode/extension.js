// Starts `mpkc lsp` for .mpk files. Install: `npm install` in this folder, then
// `npx @vscode/vsce package` and install the .vsix (or open the folder and press F5).
const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration('mpkc').get('path') || 'mpkc';
  const server = { command, args: ['lsp'] };
  client = new LanguageClient(
    'mpkc',
    'mpkc',
    { run: server, debug: server },
    { documentSelector: [{ scheme: 'file', language: 'mpk' }, { scheme: 'untitled', language: 'mpk' }] }
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
