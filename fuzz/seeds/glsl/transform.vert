#version 450
// Matrices, attributes, a struct in a uniform block and gl_Position.
layout(location = 0) in vec4 position;
layout(location = 1) in vec3 normal;
layout(location = 0) out vec3 lit;
struct Light { vec3 direction; float power; };
layout(std140, binding = 0) uniform Scene {
    mat4 model_view_projection;
    mat3 normal_matrix;
    Light lights[2];
};

void main() {
    gl_Position = model_view_projection * position;
    vec3 n = normalize(normal_matrix * normal);
    lit = vec3(0.0);
    for (int i = 0; i < 2; i++)
        lit += max(dot(n, lights[i].direction), 0.0) * lights[i].power * vec3(1.0, 0.9, 0.8);
}
