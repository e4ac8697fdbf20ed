// Hexahedra and prisms: [0, 2] x [0, 1] meshed with quadrilaterals (x < 1, recombined) and
// triangles (x > 1), extruded to z = 0.5 in layers.
Point(1) = {0, 0, 0, 0.2};
Point(2) = {1, 0, 0, 0.2};
Point(3) = {2, 0, 0, 0.2};
Point(4) = {2, 1, 0, 0.2};
Point(5) = {1, 1, 0, 0.2};
Point(6) = {0, 1, 0, 0.2};
Line(1) = {1, 2};
Line(2) = {2, 3};
Line(3) = {3, 4};
Line(4) = {4, 5};
Line(5) = {5, 6};
Line(6) = {6, 1};
Line(7) = {2, 5};
Curve Loop(1) = {1, 7, 5, 6};
Plane Surface(1) = {1};
Curve Loop(2) = {2, 3, 4, -7};
Plane Surface(2) = {2};
Transfinite Curve{1, 7, 5, 6} = 6;
Transfinite Surface{1};
Recombine Surface{1};
left[] = Extrude {0, 0, 0.5} {Surface{1}; Layers{3}; Recombine;};
right[] = Extrude {0, 0, 0.5} {Surface{2}; Layers{3}; Recombine;};
// Extrude returns the top surface, the volume, then the sides in the order of the curves.
Physical Surface("zmin") = {1, 2};
Physical Surface("zmax") = {left[0], right[0]};
Physical Surface("ymin") = {left[2], right[2]};
Physical Surface("xmax") = {right[3]};
Physical Surface("ymax") = {left[4], right[4]};
Physical Surface("xmin") = {left[5]};
Physical Volume("fluid") = {left[1], right[1]};
