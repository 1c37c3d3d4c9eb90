#!/bin/sh
# Doxygen input filter for Markdown (docs/Doxyfile, FILTER_PATTERNS): Doxygen reads `file.cpp::name`
# inside a code span as an explicit link to a member of that file, and fails on it (the test
# names in docs/guarantees.md). A zero-width space after ".cpp" stops that and shows nothing.
# Line numbers are unchanged, so warnings still point at the right lines.
exec sed -e 's/\.cpp::/.cpp\xe2\x80\x8b::/g' "$1"
