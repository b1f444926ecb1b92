(function(){
var data=JSON.parse(document.getElementById('ddbx-data').textContent);
var tabs=document.querySelectorAll('nav button');
function showView(id){
  tabs.forEach(function(b){b.classList.toggle('on',b.dataset.view===id);});
  document.querySelectorAll('.view').forEach(function(s){s.classList.toggle('on',s.id==='v-'+id);});
}
tabs.forEach(function(b){b.addEventListener('click',function(){showView(b.dataset.view);});});
function showRace(id){
  var r=data.races[id-1]; if(!r) return;
  document.getElementById('detail').textContent=r.text;
  var c=document.getElementById('cmd'); c.value=r.replay;
  document.querySelectorAll('.sel').forEach(function(e){e.classList.remove('sel');});
  document.querySelectorAll('[data-race="'+id+'"]').forEach(function(e){e.classList.add('sel');});
}
document.addEventListener('click',function(ev){
  var t=ev.target.closest?ev.target.closest('[data-race]'):null;
  if(t) showRace(+t.dataset.race);
});
var hide=document.getElementById('hide');
function filter(){
  var css='';
  document.querySelectorAll('#actors input').forEach(function(i){ if(!i.checked) css+='.a-'+i.value+'{display:none}'; });
  hide.textContent=css;
}
document.querySelectorAll('#actors input').forEach(function(i){i.addEventListener('change',filter);});
document.getElementById('all').addEventListener('click',function(){document.querySelectorAll('#actors input').forEach(function(i){i.checked=true;});filter();});
document.getElementById('none').addEventListener('click',function(){document.querySelectorAll('#actors input').forEach(function(i){i.checked=false;});filter();});
showView('event');
if(data.races.length) showRace(data.races[0].id);
document.documentElement.setAttribute('data-ddbx','ok');
})();
