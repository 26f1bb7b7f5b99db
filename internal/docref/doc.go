// Package docref holds no code, only TestDocReferences: the check that the
// comments under internal/ and plugin/ which point a reader at a file
// ("serve (handout.go)", "(Batch.TakeAck, batch.go)", "passSkipped, in
// resume.go", "plugin/client.go's offsetOpts") still name a file that
// exists and a declaration that file holds.
//
// Comments are how a reader finds the code a sentence is about, and a
// reference that moved silently sends them to the wrong file. Code moves
// freely; this test makes its comments move with it.
//
// # What counts as a reference
//
// A file is a lower-case name ending in .go. Without a slash it is in the
// package directory of the comment; with one, the path is from the module
// root. A file followed by a line number ("consumer.go:2314") cites another
// project's source (kgo, mostly) and is not checked, nor is one in a
// parenthesis that also carries a line number or the word kgo.
//
// A name goes with a file in these forms:
//
//   - Name (file.go) and Name (a.go, b.go): the word before the parenthesis,
//     when the parenthesis holds nothing but files.
//   - (Name, file.go), (file.go, Name; Other), (Type.Method, file.go): the
//     names inside the parenthesis.
//   - Name in file.go, Name, in file.go, and file.go's Name.
//
// A word is taken for a name when it is a Go identifier (or Type.Member)
// that looks like code (camelCase, an underscore or a dot) or that the
// package declares somewhere; other words are prose ("the drain
// (drain.go)") and only the file is checked.
//
// A name is found in a file when the file declares it as a function,
// method, type, variable, constant, struct field or interface method, or
// when it is a struct field of the package whose type the file declares
// (a part list names a partState field: "replay (replay.go)"). With
// several files, one of them must declare it.
package docref
