// Unit cube [0,1]^3 of tetrahedra (a few thousand), each side a named patch.
SetFactory("OpenCASCADE");
Box(1) = {0, 0, 0, 1, 1, 1};
// A few thousand tetrahedra; `gmsh -setnumber h 0.016` gives about a million.
DefineConstant[h = 0.12];
Mesh.MeshSizeMax = h;
// OpenCASCADE numbers a box's faces x = 0, x = 1, y = 0, y = 1, z = 0, z = 1.
Physical Surface("xmin") = {1};
Physical Surface("xmax") = {2};
Physical Surface("ymin") = {3};
Physical Surface("ymax") = {4};
Physical Surface("zmin") = {5};
Physical Surface("zmax") = {6};
Physical Volume("fluid") = {1};
