import ExamplesKit

#if canImport(Glibc)
  import Glibc
#endif

// Every walkthrough lives in ExamplesKit so the tests can run it too; this file only reads the
// arguments and turns the outcome into an exit status.
exit(ExamplesCommand.main(Array(CommandLine.arguments.dropFirst())))
