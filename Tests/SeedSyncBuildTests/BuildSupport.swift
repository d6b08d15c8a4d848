/// Thrown by a progress handler to interrupt a build.
struct Interruption: Error {}
