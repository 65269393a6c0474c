/**
 * `edge-llm`: the command line (package.json `bin`, and what `npm start` runs as
 * `edge-llm serve`). Parses and checks the whole command line before anything loads: an
 * unknown flag or a bad value exits with code 2 at once, naming it and the nearest flag.
 */
import { pullOnNode, runNodeCommand, runNodeServer } from '../runtime/node/main.js';
import { VERSION } from '../common/version.js';
import { parseCommandLine, type CliCommand } from './args.js';
import { CliUsageError } from './flags.js';
import { mainHelp, pullHelp, serveHelp } from './help.js';

/** argparse's exit code for a command line it refuses. */
const USAGE_EXIT_CODE = 2;

function main(argv: readonly string[]): void {
  let command: CliCommand;
  try {
    command = parseCommandLine(argv);
  } catch (error) {
    if (!(error instanceof CliUsageError)) throw error;
    console.error(`edge-llm: error: ${error.message}`);
    process.exit(USAGE_EXIT_CODE);
  }
  switch (command.command) {
    case 'help':
      console.log(command.topic === 'serve' ? serveHelp() : command.topic === 'pull' ? pullHelp() : mainHelp());
      return;
    case 'version':
      console.log(VERSION);
      return;
    case 'pull':
      runNodeCommand(pullOnNode, command);
      return;
    case 'serve':
      runNodeServer(command);
      return;
  }
}

main(process.argv.slice(2));
