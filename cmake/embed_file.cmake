# Turns a file into a C++ header holding its bytes: cmake -DINPUT=f -DOUTPUT=h -DNAME=kName -P embed_file.cmake
# (the web page of `nanoformer serve` is a file in the repository, embedded into the binary at build time)
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" length)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x[0-9a-f][0-9a-f],){32}" "\\0\n" bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp" "// Generated from ${INPUT} by cmake/embed_file.cmake: do not edit.\n#pragma once\n"
     "inline constexpr unsigned char ${NAME}[] = {\n${bytes}\n};\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
