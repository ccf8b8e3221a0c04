package grape

// #include <grape.h>
import "C"

import (
	"errors"
	"fmt"
)

// Code classifies an error; the values mirror grp_code in grape.h.
type Code int

const (
	CodeOK              Code = C.GRP_OK
	CodeInvalidArgument Code = C.GRP_ERR_INVALID_ARGUMENT // invalid argument, unknown name, size mismatch, call out of order
	CodeSyntax          Code = C.GRP_ERR_SYNTAX           // the .grp text does not parse
	CodeType            Code = C.GRP_ERR_TYPE             // the program does not type-check; an input or state of the wrong dtype, rank or shape
	CodeIO              Code = C.GRP_ERR_IO               // a file cannot be opened, read or written
	CodeFormat          Code = C.GRP_ERR_FORMAT           // a malformed file, or weights that do not match the declarations
	CodeUnsupported     Code = C.GRP_ERR_UNSUPPORTED      // valid, but not supported by this build or backend
	CodeNoDevice        Code = C.GRP_ERR_NO_DEVICE        // the requested backend or device is not available
	CodeDevice          Code = C.GRP_ERR_DEVICE           // the device failed
	CodeOutOfMemory     Code = C.GRP_ERR_OUT_OF_MEMORY
	CodeInternal        Code = C.GRP_ERR_INTERNAL    // a bug in Grape
	CodeInterrupted     Code = C.GRP_ERR_INTERRUPTED // a run stopped by an interrupt or its deadline
)

var codeNames = map[Code]string{
	CodeOK:              "ok",
	CodeInvalidArgument: "invalid argument",
	CodeSyntax:          "syntax error",
	CodeType:            "type error",
	CodeIO:              "I/O error",
	CodeFormat:          "format error",
	CodeUnsupported:     "unsupported",
	CodeNoDevice:        "no device",
	CodeDevice:          "device error",
	CodeOutOfMemory:     "out of memory",
	CodeInternal:        "internal error",
	CodeInterrupted:     "interrupted",
}

func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("code(%d)", int(c))
}

// Error is every error this package returns. Errors from the library carry its code and complete
// message (every diagnostic with file:line:col); errors detected on the Go side (a closed handle,
// a slice whose length does not match its shape) use CodeInvalidArgument.
type Error struct {
	Code    Code
	Message string
	// The position of the first diagnostic of a source error (CodeSyntax, CodeType when loading
	// a program); Line is 0 when the error has no position. Column is 1-based, in bytes.
	File         string
	Line, Column int
}

func (e *Error) Error() string {
	return "grape: " + e.Code.String() + ": " + e.Message
}

// CodeOf returns the Code of an error that is or wraps an *Error, CodeOK for nil and
// CodeInternal for any other error.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// check turns a grp_error* into an error and frees it. It must be called on every error the
// library returns.
func check(e *C.grp_error) error {
	if e == nil {
		return nil
	}
	defer C.grp_error_free(e)
	err := &Error{Code: Code(C.grp_error_code(e)), Message: C.GoString(C.grp_error_message(e))}
	var file *C.char
	var line, col C.uint32_t
	if C.grp_error_location(e, &file, &line, &col) != 0 {
		err.File = C.GoString(file)
		err.Line, err.Column = int(line), int(col)
	}
	return err
}

func newError(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func errClosed(what string) error {
	return newError(CodeInvalidArgument, "%s is closed", what)
}
